/** `estate upstream ...` at the edge: exit codes of SPEC §5, one clear line on stderr, and no secret ever stored. */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, runCli, type TempStore } from './helpers.ts';

describe('estate upstream (CLI edge cases)', () => {
  let store: TempStore;
  const cli = (args: string[]) => runCli([...args, '--store', store.store]);
  beforeAll(async () => {
    store = makeTempStore('estate-upcli-');
    const r = await cli(['upstream', 'add', 'gone', '--command', 'definitely-not-a-command-estate-test', '--scopes', 'x.use', '--clearance', 'internal']);
    expect(r.code, r.stderr).toBe(0);
  });
  afterAll(() => store?.cleanup());

  it('refuses a literal secret (exit 2) without echoing it or storing anything', async () => {
    const r = await cli(['upstream', 'add', 'leak', '--command', 'node s.js', '--env', 'TOKEN=ghp_topsecret', '--scopes', 'a', '--clearance', 'internal']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--env TOKEN: expected TOKEN=env:VARIABLE/);
    expect(r.stderr + r.stdout).not.toContain('ghp_topsecret');
    expect(readFileSync(store.store.slice('sqlite:'.length)).includes(Buffer.from('ghp_topsecret'))).toBe(false);
  });

  it('refuses an add without default access (exit 2) and a second registration (exit 3)', async () => {
    expect((await cli(['upstream', 'add', 'open', '--command', 'node s.js'])).code).toBe(2);
    const twice = await cli(['upstream', 'add', 'gone', '--command', 'node s.js', '--scopes', 'a', '--clearance', 'internal']);
    expect(twice.code).toBe(3);
    expect(twice.stderr).toMatch(/^estate: refused: upstream 'gone' is already registered \(.*\); remove it first$/m);
  });

  it('names the upstream when it cannot be reached (exit 1)', async () => {
    const r = await cli(['upstream', 'sync', 'gone']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^estate: error: upstream gone unavailable: /);
  });

  it('answers not found (exit 4) for an unknown upstream and for a tool without pending drift', async () => {
    expect((await cli(['upstream', 'sync', 'nosuch'])).code).toBe(4);
    expect((await cli(['upstream', 'drift', 'nosuch'])).code).toBe(4);
    const r = await cli(['upstream', 'approve', 'gone.tool']);
    expect([r.code, r.stderr.trim()]).toEqual([4, 'estate: not found: no pending candidate for gone.tool']);
    expect((await cli(['upstream', 'approve', 'nodot'])).code).toBe(2);
    expect((await cli(['upstream', 'reject', 'gone.tool'])).code).toBe(2); // --reason is required
  });

  it('lists and removes', async () => {
    const list = await cli(['upstream', 'list', '--json']);
    expect(JSON.parse(list.stdout)).toEqual({ upstreams: [{ ns: 'gone', transport: 'stdio', target: 'definitely-not-a-command-estate-test', tools: 0, pending: 0, status: 'active' }] });
    const rm = await cli(['upstream', 'remove', 'gone', '--reason', 'test', '--json']);
    expect(rm.code, rm.stderr).toBe(0);
    expect(JSON.parse((await cli(['upstream', 'list', '--json'])).stdout).upstreams[0].status).toBe('removed');
  });
});
