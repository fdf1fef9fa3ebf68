/**
 * The library examples run as documented: the zod-defined tool module is published with `--module`, the TypeScript
 * handler module serves it, the agent script lists and calls through the tools cache on both revisions, and the
 * cache-invalidation consumer reads change messages from the real Kafka broker (skipping a malformed one).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, REPO_ROOT, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';
import { probeKafka, produceRaw, testKafkaBrokers, uniqueTopic } from '../int/kafka-helpers.ts';

const run = (script: string, args: string[], env: NodeJS.ProcessEnv = {}, onStderr?: (text: string) => void): Promise<{ code: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'examples', script), ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
      onStderr?.(stderr);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });

describe('library examples', () => {
  let store: TempStore;
  let http: HttpServer;

  beforeAll(async () => {
    store = makeTempStore('estate-examples-');
    const published = await runCli(['publish', '--module', 'examples/zod-tools.ts', '--store', store.store], { cwd: REPO_ROOT });
    if (published.code !== 0) throw new Error(published.stderr);
    http = await startHttpServer(['--store', store.store, '--handlers', 'examples/handlers.ts', '--scopes', 'payments.read', '--clearance', 'internal'], { env: { ESTATE_LOG_LEVEL: 'info' } });
  }, 90_000);

  afterAll(async () => {
    await http?.stop();
    store?.cleanup();
  });

  for (const revision of ['2026-07-28', '2025-11-25']) {
    it(`examples/agent.ts lists once and calls through the cache at ${revision}`, async () => {
      const r = await run('agent.ts', [http.url, revision]);
      expect(r.code, r.stderr).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines.slice(0, 3)).toEqual([
        'payments.quote@1.0.0: 100 EUR = 108 USD at 1.08',
        'payments.quote@1.0.0: 250 AED = 62.5 EUR at 0.25',
        'payments.quote@1.0.0: 40 USD = 37.2 EUR at 0.93',
      ]);
      expect(JSON.parse(lines[3] ?? '{}')).toMatchObject({ stats: { hits: 2, misses: 1, lists: 1, calls: 3 } });
    }, 90_000);
  }

  it('examples/cache-consumer.ts evicts on change messages from Kafka and skips a malformed one', async () => {
    const brokers = testKafkaBrokers();
    const down = await probeKafka(brokers);
    if (down !== null && process.env.CI !== 'true') return; // no broker here: nothing to consume from
    const topic = uniqueTopic('example-consumer');
    const change = (position: string, version: string) =>
      JSON.stringify({ type: 'catalogue.changed', position, tool: 'payments.quote', version, event: 'ToolVersionPublished', at: '2026-01-01T00:00:00.000Z' });
    await produceRaw(brokers, topic, [
      { key: 'payments.quote', value: 'not json at all' },
      { key: 'payments.quote', value: change('1', '1.0.0') },
      { key: 'payments.quote', value: change('1', '1.0.0') }, // a redelivery
      { key: 'payments.quote', value: change('2', '1.1.0') },
    ]);
    const r = await run('cache-consumer.ts', ['--max', '2'], { ESTATE_BROKERS: brokers.join(','), ESTATE_TOPIC: topic, ESTATE_FROM_BEGINNING: '1' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('malformed change message: not JSON');
    const lines = r.stdout.trim().split('\n');
    expect(lines.slice(0, 2)).toEqual([
      'evicted payments.quote (ToolVersionPublished 1.0.0 at position 1)',
      'evicted payments.quote (ToolVersionPublished 1.1.0 at position 2)',
    ]);
    expect(JSON.parse(lines[2] ?? '{}')).toEqual({ stats: { delivered: 2, duplicates: 1, malformed: 1 } });
  }, 90_000);
});
