/**
 * `estate watch --bus kafka://...` (SPEC §9): a publish made by another process reaches the topic through a serving
 * replica's relay, and the watcher prints its message; a malformed message on the shared topic is skipped, not fatal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, runCli, startHttpServer, toolDefinition, type HttpServer, type TempStore } from '../e2e/helpers.ts';
import { startWatch, type Watcher } from '../e2e/watch-helpers.ts';
import { produceRaw, readTopicUntil, requireServices, uniqueTopic } from './kafka-helpers.ts';

const services = await requireServices('estate watch from Kafka');

if (services) {
  describe('estate watch from Kafka', () => {
    const { brokers } = services;
    const bus = `kafka://${brokers.join(',')}`;
    const env = { ESTATE_TOPIC: uniqueTopic('watch'), ESTATE_RELAY_TTL_MS: '2000' };
    let temp: TempStore;
    let server: HttpServer | undefined;
    let watcher: Watcher | undefined;

    const publish = async (name: string): Promise<string> => {
      const out = await runCli(['publish', temp.file(`${name}.json`, toolDefinition({ name })), '--json', '--store', temp.store], { env });
      expect(out.code, out.stderr).toBe(0);
      return (JSON.parse(out.stdout) as { position: string }).position;
    };

    beforeAll(async () => {
      temp = makeTempStore('estate-watch-kafka-');
      server = await startHttpServer(['--store', temp.store, '--bus', bus], { env, readyTimeoutMs: 60_000 });
    }, 90_000);
    afterAll(async () => {
      await watcher?.stop();
      await server?.stop();
      temp?.cleanup();
    });

    it('prints the message of a publish made by another process, relayed through the topic', async () => {
      const first = await publish('test.kafka-first');
      // The topic exists once the relay has published the first change.
      await readTopicUntil(brokers, env.ESTATE_TOPIC, (m) => m.some((x) => x.value.includes('test.kafka-first')));
      await produceRaw(brokers, env.ESTATE_TOPIC, [{ key: 'junk', value: '{"type":"catalogue.changed","position":5}' }]);
      // From someone else who can write to the topic: a tool name with a bidi override and a C1 control is no tool name.
      const forged = { type: 'catalogue.changed', position: '999999', tool: 'evil\u202Egnp.exe\u009B2J', version: '1.0.0', event: 'ToolVersionPublished', at: new Date(0).toISOString() };
      await produceRaw(brokers, env.ESTATE_TOPIC, [{ key: 'evil', value: JSON.stringify(forged) }]);

      watcher = await startWatch(['--bus', bus, '--from-beginning'], env);
      expect(watcher.stderr()).toMatch(/following Kafka topic estate\.test\.watch\./);
      expect(await watcher.changes.next((c) => c.tool === 'test.kafka-first', 60_000, 'first change')).toMatchObject({ position: first, tool: 'test.kafka-first', event: 'ToolVersionPublished' });

      const second = await publish('test.kafka-second');
      const line = await watcher.changes.next((c) => c.tool === 'test.kafka-second', 60_000, 'relayed change');
      expect(line).toEqual({ type: 'catalogue.changed', position: second, tool: 'test.kafka-second', version: '1.0.0', event: 'ToolVersionPublished', at: expect.any(String) });
      // Both reported (the first at once, then at most a line each 10 s, counting), neither printed.
      expect(watcher.stderr()).toMatch(/skipped 1 malformed message \(the first: malformed change message: (position|tool): /);
      expect(watcher.stdout()).not.toContain('999999');
      expect(/[\u0080-\u009F\u202E]/.test(watcher.stdout() + watcher.stderr())).toBe(false);
      expect(await watcher.stop()).toBe(0);
    }, 240_000);
  });
}
