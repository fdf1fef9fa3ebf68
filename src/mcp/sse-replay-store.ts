/**
 * What a session's GET stream sent, kept in memory so a client that reconnects with `Last-Event-ID` gets what it
 * missed. Per session and bounded: sessions live on the replica that made them (SPEC §3), and a client that was gone
 * for longer than the buffer lists again.
 */
import type { EventStore as SdkEventStore, JSONRPCMessage } from '@modelcontextprotocol/server';

interface Stored {
  id: string;
  streamId: string;
  message: JSONRPCMessage;
}

export const createReplayStore = (capacity = 1000): SdkEventStore => {
  const events: Stored[] = [];
  let seq = 0;
  const indexOf = (id: string): number => events.findIndex((e) => e.id === id);
  return {
    storeEvent(streamId, message) {
      const id = String(++seq);
      events.push({ id, streamId, message });
      if (events.length > capacity) events.splice(0, events.length - capacity);
      return Promise.resolve(id);
    },
    getStreamIdForEventId(eventId) {
      return Promise.resolve(events[indexOf(eventId)]?.streamId);
    },
    async replayEventsAfter(lastEventId, { send }) {
      const i = indexOf(lastEventId);
      const streamId = events[i]?.streamId ?? '';
      for (const e of events.slice(i + 1)) if (e.streamId === streamId) await send(e.id, e.message);
      return streamId;
    },
  };
};
