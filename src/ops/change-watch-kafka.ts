/** `estate watch --bus kafka://...`: the change topic, decoded and deduplicated by the package's own consumer. */
import type { CatalogueChange } from '#app/ports';
import { parseKafkaUrl } from '#bus/kafka-change-bus';
import { consumeChanges } from '#lib/changes';
import { isAfter, type WatchHandle, type WatchStart } from './change-watch.ts';

/** Consume the change topic; `start` picks the offsets (`after` reads from the beginning and drops what is not after). */
export const watchKafka = (
  options: { url: string; topic: string },
  start: WatchStart,
  onChange: (c: CatalogueChange) => void,
): WatchHandle => {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const consumer = consumeChanges({
    brokers: parseKafkaUrl(options.url),
    topic: options.topic,
    clientId: `estate-watch-${process.pid}`,
    fromBeginning: start !== 'end',
    onChange: (c) => {
      if (typeof start === 'object' && !isAfter(c.position, start.after)) return;
      onChange(c);
    },
  });
  return {
    started: consumer.ready.then(() => (typeof start === 'object' ? start.after : null)),
    done,
    async close() {
      await consumer.stop();
      finish();
    },
  };
};
