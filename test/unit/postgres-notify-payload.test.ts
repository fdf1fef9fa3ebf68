/** The NOTIFY payload that names the streams a commit appended to (src/store/postgres-listener.ts). */
import { describe, expect, it } from 'vitest';
import { mayConcern, notifyPayload, streamsOfPayload } from '#store/postgres-listener';

describe('NOTIFY payload', () => {
  it('names each stream once, and reads back', () => {
    const payload = notifyPayload(['tool-a', 'call-1', 'tool-a']);
    expect(streamsOfPayload(payload)).toEqual(['tool-a', 'call-1']);
  });

  it('names categories when the streams would not fit in a notification, and nothing when even those would not', () => {
    const runs = Array.from({ length: 500 }, (_, i) => `run-0000019ad${i}-a7b1@tenant.subject`);
    const many = notifyPayload([...runs, 'tool-a.b']);
    expect(streamsOfPayload(many)).toEqual(['run-*', 'tool-*']);
    const categories = Array.from({ length: 500 }, (_, i) => `category${i}-x`);
    expect(notifyPayload(categories)).toBe('');
    expect(streamsOfPayload(notifyPayload(categories))).toBeNull();
  });

  it('an entry concerns a reader of a prefix when the stream starts with it, or its category overlaps it', () => {
    expect(mayConcern('tool-a.b', 'tool-')).toBe(true);
    expect(mayConcern('run-1@x', 'tool-')).toBe(false);
    expect(mayConcern('run-*', 'tool-')).toBe(false);
    expect(mayConcern('tool-*', 'tool-')).toBe(true);
    expect(mayConcern('tool-*', 'tool-payments.')).toBe(true);
    expect(mayConcern('run-*', 'run-0000019ad1@')).toBe(true);
    expect(mayConcern('tool-*', 'to')).toBe(true);
  });

  it('reads anything that is not a list of stream ids as naming none', () => {
    for (const payload of [undefined, '', 'not json', '{"a":1}', '[1,2]', 'null', '["a",null]']) {
      expect(streamsOfPayload(payload)).toBeNull();
    }
  });
});
