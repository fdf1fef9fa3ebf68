/**
 * fetchTopicEnds waits out a partition whose leader is not in place yet (a new topic's first moments: CI once saw
 * NOT_LEADER_FOR_PARTITION from listOffsets right after the topic was created, and kafkajs does not retry it), and
 * passes every other failure straight through.
 */
import { KafkaJSProtocolError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { fetchTopicEnds } from '#bus/kafka-client';

const offsets = [{ partition: 0, offset: '7', high: '7', low: '0' }];
const protocolError = (type: string, code: number): Error =>
  // What kafkajs builds from a broker's error code (its typings only admit an Error, which it reads type and code from).
  new KafkaJSProtocolError(Object.assign(new Error(`broker said ${type}`), { type, code }));

const admin = (failures: Error[]) => {
  let calls = 0;
  return {
    calls: () => calls,
    fetchTopicOffsets: (topic: string) => {
      expect(topic).toBe('t');
      calls++;
      const failure = failures.shift();
      return failure ? Promise.reject(failure) : Promise.resolve(offsets);
    },
  };
};

describe('fetchTopicEnds', () => {
  it('asks again while the broker says the partition has no leader yet, backing off', async () => {
    const a = admin([protocolError('NOT_LEADER_FOR_PARTITION', 6), protocolError('LEADER_NOT_AVAILABLE', 5), protocolError('UNKNOWN_TOPIC_OR_PARTITION', 3)]);
    const waits: number[] = [];
    const ends = await fetchTopicEnds(a, 't', 12, (ms) => (waits.push(ms), Promise.resolve()));
    expect(ends).toEqual(offsets);
    expect(a.calls()).toBe(4);
    expect(waits).toEqual([100, 200, 300]);
  });

  it('gives up after its attempts with the broker\'s own error', async () => {
    const a = admin(Array.from({ length: 5 }, () => protocolError('NOT_LEADER_FOR_PARTITION', 6)));
    await expect(fetchTopicEnds(a, 't', 3, () => Promise.resolve())).rejects.toThrow('broker said NOT_LEADER_FOR_PARTITION');
    expect(a.calls()).toBe(3);
  });

  it('does not retry any other failure', async () => {
    const a = admin([protocolError('TOPIC_AUTHORIZATION_FAILED', 29)]);
    await expect(fetchTopicEnds(a, 't', 12, () => Promise.resolve())).rejects.toThrow('TOPIC_AUTHORIZATION_FAILED');
    const b = admin([new Error('connection refused')]);
    await expect(fetchTopicEnds(b, 't', 12, () => Promise.resolve())).rejects.toThrow('connection refused');
    expect(a.calls() + b.calls()).toBe(2);
  });
});
