/**
 * What a session's streams sent, kept in memory so a client that reconnects with `Last-Event-ID` gets what it
 * missed. Per session and bounded, in messages and in size: sessions live on the replica that made them (SPEC §3),
 * and a client that was gone for longer than the buffer lists again. Kept as JSON text: a tools/list page holds up
 * to 500 tools, and a session that listed a large catalogue page by page must not pin every page it was sent.
 */
import type { EventStore as SdkEventStore, JSONRPCMessage } from '@modelcontextprotocol/server';

interface Stored {
  id: string;
  streamId: string;
  text: string;
}

/** Characters of JSON a session keeps for replay, over all its messages (the oldest go first). */
export const REPLAY_CHARS = 1024 * 1024;

export const createReplayStore = (capacity = 1000, maxChars = REPLAY_CHARS): SdkEventStore & Required<Pick<SdkEventStore, 'getStreamIdForEventId'>> => {
  const events: Stored[] = [];
  let chars = 0;
  let seq = 0;
  const indexOf = (id: string): number => events.findIndex((e) => e.id === id);
  return {
    storeEvent(streamId, message) {
      const id = String(++seq);
      const text = JSON.stringify(message);
      events.push({ id, streamId, text });
      chars += text.length;
      // The newest message always stays (a reconnect right after it finds its id), whatever its size.
      while (events.length > 1 && (events.length > capacity || chars > maxChars)) chars -= (events.shift() as Stored).text.length;
      return Promise.resolve(id);
    },
    getStreamIdForEventId(eventId) {
      return Promise.resolve(events[indexOf(eventId)]?.streamId);
    },
    async replayEventsAfter(lastEventId, { send }) {
      const i = indexOf(lastEventId);
      const streamId = events[i]?.streamId ?? '';
      for (const e of events.slice(i + 1)) if (e.streamId === streamId) await send(e.id, JSON.parse(e.text) as JSONRPCMessage);
      return streamId;
    },
  };
};
