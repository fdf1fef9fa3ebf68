/** The NOTIFY payload that names the streams a commit appended to (src/store/postgres-listener.ts). */
import { describe, expect, it } from 'vitest';
import { notifyPayload, streamsOfPayload } from '#store/postgres-listener';

describe('NOTIFY payload', () => {
  it('names each stream once, and reads back', () => {
    const payload = notifyPayload(['tool-a', 'call-1', 'tool-a']);
    expect(streamsOfPayload(payload)).toEqual(['tool-a', 'call-1']);
  });

  it('names no streams (wakes every reader) when the list would not fit in a notification', () => {
    const many = Array.from({ length: 500 }, (_, i) => `tool-a.rather.long.tool.name.${i}`);
    expect(notifyPayload(many)).toBe('');
    expect(streamsOfPayload(notifyPayload(many))).toBeNull();
  });

  it('reads anything that is not a list of stream ids as naming none', () => {
    for (const payload of [undefined, '', 'not json', '{"a":1}', '[1,2]', 'null', '["a",null]']) {
      expect(streamsOfPayload(payload)).toBeNull();
    }
  });
});
