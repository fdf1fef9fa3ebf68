/**
 * A serving process's catalogue and its upstream pool read the store separately, so a version approved after an
 * upstream was removed and registered again (at another target) can be served before the pool has heard of either.
 * Its first call must still reach the new registration's upstream, never the old one's child (SPEC §7: clients call
 * only the approved snapshot; `estate upstream remove` ends the old registration). The pool here never follows the
 * store at all (no `start`): the widest such lag there can be. Checked on a SQLite file and on the real PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLog } from '#app/log';
import { openEstate } from '#compose/estate';
import { loadConfig } from '#config';
import type { CallToolResult, HandlerContext } from '#handlers/types';
import { UpstreamPool } from '#upstream/pool';
import { UpstreamRegistry } from '#upstream/registry';
import { requirePostgres } from './pg-helpers.ts';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'upstream', 'fixture-server.mjs');
const dir = mkdtempSync(join(tmpdir(), 'estate-pool-vetting-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ACCESS = { requiredScopes: ['fx.read'], tenants: [], classification: 'internal' as const };
const echo = (description: string) => ({ name: 'echo', description, inputSchema: { type: 'object', properties: { message: { type: 'string' } } }, annotations: { readOnlyHint: true } });

const ctxFor = (name: string, version: string): HandlerContext => {
  const log = (): void => undefined;
  return {
    principal: { subject: 'vetting', tenant: 'acme', scopes: ['fx.read'], clearance: 'internal' },
    runId: randomUUID(),
    tool: { name, version, schemaHash: 'h' },
    signal: new AbortController().signal,
    log: { debug: log, info: log, warn: log, error: log },
  };
};

const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? String(c.text) : '')).join('');
const callsIn = (file: string): { tool: string; pid: number }[] =>
  readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { tool: string; pid: number });

const suite = (label: string, store: string): void => {
  describe(`an upstream pool that has not heard of a removal and a new registration (${label})`, () => {
    it('sends the first call of a version approved under the new registration to the new upstream, and reads the registration once per version', async () => {
      const ns = `vet${randomUUID().replaceAll('-', '').slice(0, 10)}`;
      const upstream = (which: string) => {
        const spec = join(dir, `${ns}-${which}.json`);
        const calls = join(dir, `${ns}-${which}.log`);
        writeFileSync(spec, JSON.stringify({ tools: [echo(`Echo from ${which}.`)] }));
        writeFileSync(calls, '');
        return { target: { transport: 'stdio' as const, command: process.execPath, args: [FIXTURE, spec, calls], env: {} }, calls };
      };
      const old = upstream('old');
      const next = upstream('new');
      const estate = await openEstate(loadConfig({ store }));
      const registry = new UpstreamRegistry({ store: estate.store, commands: estate.commands, definitions: estate.definitions });
      let loads = 0;
      const counted = Object.create(registry) as UpstreamRegistry;
      counted.load = (n: string) => {
        loads++;
        return registry.load(n);
      };
      const pool = new UpstreamPool({ registry: counted, selection: 'all', env: process.env, log: silentLog, actor: 'vetting', syncIntervalMs: 0 });
      try {
        const tool = `${ns}.echo`;
        await registry.register(ns, old.target, ACCESS, 'none', 'vetting');
        await registry.sync(ns, [echo('Echo from old.')], 'vetting');
        const first = await registry.approveOne(ns, tool, { by: 'vetting' });
        const handler = pool.handlers({})[`upstream:${ns}/echo`];
        if (!handler) throw new Error('no executor for the upstream tool');

        const one = (await handler({ message: 'one' }, ctxFor(tool, first.version))) as CallToolResult;
        expect(textOf(one)).toContain('one');
        expect(callsIn(old.calls)).toHaveLength(1);

        // Another process removes the upstream, registers the namespace again at another command, and approves its tool.
        await registry.remove(ns, 'replaced', 'vetting');
        await registry.register(ns, next.target, ACCESS, 'none', 'vetting');
        await registry.sync(ns, [echo('Echo from new.')], 'vetting');
        const second = await registry.approveOne(ns, tool, { by: 'vetting' });
        expect(second.version).not.toBe(first.version);

        const before = loads;
        const two = (await handler({ message: 'two' }, ctxFor(tool, second.version))) as CallToolResult;
        expect(textOf(two)).toContain('two');
        expect(callsIn(next.calls)).toHaveLength(1);
        expect(callsIn(old.calls)).toHaveLength(1);
        const readForIt = loads - before;
        expect(readForIt).toBeGreaterThan(0);

        // Later calls of a version already checked read nothing more.
        await handler({ message: 'three' }, ctxFor(tool, second.version));
        await handler({ message: 'four' }, ctxFor(tool, second.version));
        expect(loads - before).toBe(readForIt);
        expect(callsIn(next.calls)).toHaveLength(3);
        expect(callsIn(old.calls)).toHaveLength(1);
      } finally {
        await pool.close();
        await estate.close();
      }
    }, 60_000);
  });
};

suite('a SQLite file', `sqlite:${join(dir, 'vetting.db')}`);
const pgUrl = await requirePostgres('upstream pool vetting on PostgreSQL');
if (pgUrl) suite('PostgreSQL', pgUrl);
