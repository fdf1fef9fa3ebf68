/** `estate watch` tailing the store (SPEC §9): another process's publish printed as the SPEC §4 message, and its flags. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, runCli, toolDefinition, type TempStore } from './helpers.ts';
import { startWatch, type Watcher } from './watch-helpers.ts';

describe('estate watch (store tail)', () => {
  let temp: TempStore;
  const watchers: Watcher[] = [];
  const publish = async (name: string, version = '1.0.0'): Promise<string> => {
    const out = await runCli(['publish', temp.file(`${name}-${version}.json`, toolDefinition({ name, version })), '--json', '--store', temp.store]);
    expect(out.code, out.stderr).toBe(0);
    return (JSON.parse(out.stdout) as { position: string }).position;
  };

  beforeAll(() => {
    temp = makeTempStore('estate-watch-');
  });
  afterAll(async () => {
    for (const w of watchers) await w.stop();
    temp.cleanup();
  });

  it('prints the message of a publish made by another process, from the end, as one JSON line', async () => {
    const before = await publish('test.before');
    const w = await startWatch(['--store', temp.store]);
    watchers.push(w);
    expect(w.stderr()).toMatch(/following the store sqlite from the end/);
    const position = await publish('test.watched');
    const line = await w.changes.next(() => true, 30_000, 'change line');
    expect(line).toEqual({ type: 'catalogue.changed', position, tool: 'test.watched', version: '1.0.0', event: 'ToolVersionPublished', at: expect.any(String) });
    expect(Object.keys(line)).toEqual(['type', 'position', 'tool', 'version', 'event', 'at']);
    const dep = await runCli(['deprecate', 'test.before@1.0.0', '--reason', 'old', '--store', temp.store]);
    expect(dep.code, dep.stderr).toBe(0);
    expect(await w.changes.next(() => true, 30_000, 'deprecation line')).toMatchObject({ tool: 'test.before', event: 'ToolVersionDeprecated' });
    // Nothing from before the start, and Ctrl-C ends it cleanly.
    expect(w.changes.seen.map((c) => c.position)).not.toContain(before);
    expect(await w.stop()).toBe(0);
  }, 180_000);

  it('--from prints what came strictly after a position, and --count exits once it has printed that many', async () => {
    const first = await publish('test.from-a');
    await publish('test.from-b');
    await publish('test.from-c');
    const out = await runCli(['watch', '--from', first, '--count', '2', '--store', temp.store]);
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.trim().split('\n').map((l) => JSON.parse(l) as { tool: string });
    expect(lines.map((l) => l.tool)).toEqual(['test.from-b', 'test.from-c']);
    const all = await runCli(['watch', '--from-beginning', '--count', '1', '--store', temp.store]);
    expect(JSON.parse(all.stdout)).toMatchObject({ tool: 'test.before', event: 'ToolVersionPublished' });
  }, 180_000);

  it('--from past the newest change says so once on stderr, and still prints a change made after it', async () => {
    const newest = await publish('test.past-a');
    const past = String(Number(newest) + 2);
    const w = await startWatch(['--from', past, '--store', temp.store]);
    watchers.push(w);
    const deadline = Date.now() + 30_000;
    while (!w.stderr().includes('is past the newest change') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(w.stderr()).toContain(`estate watch: position ${past} is past the newest change in this store (position ${newest}): nothing prints until a change is made after it`);
    // Publish until a change lands after the position given (each publish's position is the store's to choose).
    let after = '';
    for (let i = 0; i < 5 && !(Number(after) > Number(past)); i++) after = await publish(`test.past-${i}`);
    expect(Number(after)).toBeGreaterThan(Number(past));
    expect(await w.changes.next((c) => c.position === after, 30_000, 'the change after the position')).toMatchObject({ position: after });
    expect(w.changes.seen.map((c) => c.tool)).not.toContain('test.past-a');
    expect(await w.stop()).toBe(0);
    // At the newest change, or before it, nothing is said.
    const at = await startWatch(['--from', newest, '--count', '1', '--store', temp.store]);
    watchers.push(at);
    expect(await at.exited).toBe(0);
    expect(at.stderr()).not.toContain('past the newest change');
  }, 180_000);

  it('refuses bad flags with exit 2 and one line, and never creates a store', async () => {
    const cases = [
      ['--from', '1;DROP TABLE events'],
      ['--from', '../../etc/passwd'],
      ['--from', `${'9'.repeat(40)}`],
      ['--from', '1', '--from-end'],
      ['--count', '0'],
    ];
    const results = await Promise.all(cases.map((args) => runCli(['watch', ...args, '--store', temp.store], { timeoutMs: 120_000 })));
    results.forEach((out, i) => {
      expect(out.code, cases[i]!.join(' ')).toBe(2);
      expect(out.stderr.trim().split('\n')).toHaveLength(1);
      expect(out.stdout).toBe('');
    });
    const missing = await runCli(['watch', '--store', `sqlite:${temp.dir}/nothing-here.db`]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no store/);
  }, 240_000);
});
