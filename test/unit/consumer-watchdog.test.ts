/**
 * The Kafka consumer watchdog on a hand-driven clock: a consumer that kafkajs gave up on, or one that went silent
 * after a broker restart, is replaced; a busy or healthy one is left alone; a failed replacement is tried again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { silentLog } from '#app/log';
import { watchConsumer, type ConsumerWatchdog } from '#bus/consumer-watchdog';
import { ManualTimer } from '../fixtures/manual-timer.ts';

const setup = (failFirst = 0): { timer: ManualTimer; dog: ConsumerWatchdog; calls: number[] } => {
  const timer = new ManualTimer();
  const calls: number[] = [];
  let failures = failFirst;
  const dog = watchConsumer({
    stallMs: 30_000,
    deadRestartMs: 2000,
    timer,
    log: silentLog,
    restart: async () => {
      calls.push(timer.now());
      if (failures-- > 0) throw new Error('broker still down');
    },
  });
  return { timer, dog, calls };
};

let open: ConsumerWatchdog | null = null;
afterEach(async () => {
  await open?.close();
  open = null;
});

describe('Kafka consumer watchdog', () => {
  it('leaves a consumer alone while it shows signs of life', async () => {
    const { timer, dog, calls } = setup();
    open = dog;
    for (let i = 0; i < 20; i++) {
      await timer.advance(10_000);
      dog.alive();
    }
    expect(calls).toEqual([]);
  });

  it('replaces a consumer silent for the stall period, once, and not again while the new one is alive', async () => {
    const { timer, dog, calls } = setup();
    open = dog;
    await timer.advance(29_000);
    expect(calls).toEqual([]);
    await timer.advance(11_000);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toBeGreaterThanOrEqual(30_000);
    for (let i = 0; i < 10; i++) {
      await timer.advance(5000);
      dog.alive();
    }
    expect(calls).toHaveLength(1);
    expect(dog.restarts).toBe(1);
  });

  it('does not count a long batch (a catch-up from the store) as a stall', async () => {
    const { timer, dog, calls } = setup();
    open = dog;
    dog.batchStarted();
    await timer.advance(120_000);
    expect(calls).toEqual([]);
    dog.batchEnded();
    await timer.advance(40_000);
    expect(calls).toHaveLength(1);
  });

  it('restarts a consumer that kafkajs will not restart, within seconds, and leaves one kafkajs restarts to kafkajs', async () => {
    const { timer, dog, calls } = setup();
    open = dog;
    dog.crashed(true);
    await timer.advance(5000);
    expect(calls).toEqual([]);
    dog.crashed(false);
    await timer.advance(3000);
    expect(calls).toHaveLength(1);
  });

  it('tries a failed replacement again after the stall period until one succeeds', async () => {
    const { timer, dog, calls } = setup(2);
    open = dog;
    dog.crashed(false);
    await timer.advance(3000);
    expect(calls).toHaveLength(1);
    await timer.advance(20_000);
    expect(calls).toHaveLength(1);
    await timer.advance(15_000);
    expect(calls).toHaveLength(2);
    await timer.advance(35_000);
    expect(calls).toHaveLength(3);
    // The third succeeded: a healthy consumer is then left alone.
    for (let i = 0; i < 10; i++) {
      await timer.advance(5000);
      dog.alive();
    }
    expect(calls).toHaveLength(3);
  });

  it('close ends the loop at once', async () => {
    const { timer, dog } = setup();
    await dog.close();
    expect(timer.sleeping).toBe(0);
  });
});
