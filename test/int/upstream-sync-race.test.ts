/**
 * Several processes syncing one upstream at once on one store (a SQLite file; the real PostgreSQL) — replicas of a
 * shared estate each hearing the same list_changed: every drift is recorded ONCE (optimistic concurrency on the
 * upstream's stream), whoever wins.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeUpstreamEvent } from '#app/event-codec';
import { loadConfig } from '#config';
import { upstreamStream } from '#domain/events';
import { openEstate } from '#compose/estate';
import { UpstreamRegistry } from '#upstream/registry';
import { requirePostgres } from './pg-helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'upstream', 'fixture-server.mjs');
const dir = mkdtempSync(join(tmpdir(), 'estate-upstream-race-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ESTATE_LOG_LEVEL: 'silent' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });

const PROCESSES = 4;
const tools = ['alpha', 'beta', 'gamma'].map((name) => ({ name, description: `Tool ${name}.`, inputSchema: { type: 'object', properties: {} }, annotations: { readOnlyHint: true } }));

const raceSuite = (label: string, store: string): void => {
  describe(`${PROCESSES} processes syncing one upstream on ${label}`, () => {
    it('record each drift once', async () => {
      const ns = `race${randomUUID().replaceAll('-', '').slice(0, 10)}`;
      const spec = join(dir, `${ns}.json`);
      const calls = join(dir, `${ns}.log`);
      writeFileSync(spec, JSON.stringify({ tools }));
      writeFileSync(calls, '');
      const estate = await openEstate(loadConfig({ store }));
      try {
        const registry = new UpstreamRegistry({ store: estate.store, commands: estate.commands, definitions: estate.definitions });
        await registry.register(ns, { transport: 'stdio', command: process.execPath, args: [FIXTURE, spec, calls], env: {} }, { requiredScopes: ['race'], tenants: [], classification: 'internal' }, 'none', 'race');
        const results = await Promise.all(Array.from({ length: PROCESSES }, () => run(['bin/estate.js', 'upstream', 'sync', ns, '--json', '--store', store])));
        for (const r of results) expect(r.code, r.stderr).toBe(0);
        const recordedBy = results.map((r) => (JSON.parse(r.stdout) as { drift: unknown[] }).drift.length);
        expect(recordedBy.reduce((a, b) => a + b, 0)).toBe(tools.length);
        const events = (await estate.store.readStream(upstreamStream(ns))).map(decodeUpstreamEvent);
        const drift = events.filter((e) => e?.type === 'UpstreamDriftDetected').map((e) => (e?.type === 'UpstreamDriftDetected' ? e.data.tool : ''));
        expect(drift.sort()).toEqual(tools.map((t) => `${ns}.${t.name}`).sort());
      } finally {
        await estate.close();
      }
    }, 120_000);
  });
};

raceSuite('one SQLite file', `sqlite:${join(dir, 'race.db')}`);
const pgUrl = await requirePostgres('upstream sync race on PostgreSQL');
if (pgUrl) raceSuite('PostgreSQL', pgUrl);
