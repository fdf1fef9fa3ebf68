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

/** Estate's own use of the buffer (session-stream.ts), synchronous so a stream's events keep their order. */
export interface ReplayBuffer {
  /** Keep one message (as its JSON text) of `streamId`; returns its event id. */
  record(streamId: string, text: string): string;
  /** The stream an event id belongs to, if it is still kept. */
  streamOf(eventId: string): string | undefined;
  /** The events of `eventId`'s stream kept after it, oldest first (none if the id is no longer kept). */
  after(eventId: string): { id: string; text: string }[];
  /**
   * The events of `streamId` kept with a later id than `eventId`, oldest first, even when `eventId` itself is no longer
   * kept (ids ascend as numbers): what a connection that fell behind still has to be sent (session-stream.ts).
   */
  following(streamId: string, eventId: string): { id: string; text: string }[];
}

export type ReplayStore = SdkEventStore & Required<Pick<SdkEventStore, 'getStreamIdForEventId'>> & ReplayBuffer;

export const createReplayStore = (capacity = 1000, maxChars = REPLAY_CHARS): ReplayStore => {
  const events: Stored[] = [];
  let chars = 0;
  let seq = 0;
  const indexOf = (id: string): number => events.findIndex((e) => e.id === id);
  const record = (streamId: string, text: string): string => {
    const id = String(++seq);
    events.push({ id, streamId, text });
    chars += text.length;
    // The newest message always stays (a reconnect right after it finds its id), whatever its size.
    while (events.length > 1 && (events.length > capacity || chars > maxChars)) chars -= (events.shift() as Stored).text.length;
    return id;
  };
  const after = (eventId: string): { id: string; text: string }[] => {
    const i = indexOf(eventId);
    if (i < 0) return [];
    const streamId = (events[i] as Stored).streamId;
    return events.slice(i + 1).filter((e) => e.streamId === streamId);
  };
  return {
    record,
    streamOf: (eventId) => events[indexOf(eventId)]?.streamId,
    after,
    following: (streamId, eventId) => {
      const from = Number(eventId);
      return events.filter((e) => e.streamId === streamId && Number(e.id) > from);
    },
    storeEvent(streamId, message) {
      return Promise.resolve(record(streamId, JSON.stringify(message)));
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
