/**
 * Concurrent publishers of one tool in separate processes on one store (a SQLite file; the real PostgreSQL): exactly
 * one wins each version, no event is lost or duplicated, and the invariants hold when the log is replayed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeCatalogueEvent } from '#app/event-codec';
import { loadConfig } from '#config';
import { toolStream } from '#domain/events';
import { openEstate } from '#compose/estate';
import { requirePostgres } from './pg-helpers.ts';
import { raceDefinition } from './publish-race-definitions.ts';
import { untilAllReadable } from '../fixtures/readable.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'estate-race-'));
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

interface Attempt {
  worker: string;
  version: string;
  result: string;
  code: string | null;
  position: string | null;
}

const WORKERS = 8;
const VERSIONS = 12;

const raceSuite = (label: string, storeFor: (file: string) => string): void => {
  describe(`8 processes publishing the same tool on ${label}`, () => {
    // A name no earlier run used, so a shared database (PostgreSQL) needs no cleaning.
    const toolBase = `race${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}.tool`;
    const tool = toolBase;
    it('one winner per version, every win is exactly one event, nothing lost or duplicated, invariants hold on replay', { timeout: 120_000 }, async () => {
      const store = storeFor('race.db');
      const results = await Promise.all(
        Array.from({ length: WORKERS }, (_, w) => run(['--import', 'tsx', 'test/int/publish-race-worker.ts', store, String(w), String(VERSIONS), tool])),
      );
      for (const r of results) expect(r.code, r.stderr).toBe(0);
      const attempts: Attempt[] = results.flatMap((r) => r.stdout.trim().split('\n').map((l) => JSON.parse(l) as Attempt));
      expect(attempts).toHaveLength(WORKERS * VERSIONS);
      // A loser is re-judged against the winner's state: refused as immutable (same version, other content) or not
      // monotonic (the tool already moved past it) — never an error, never a lost race surfacing as a conflict.
      for (const a of attempts) {
        expect(['published', 'refused'], JSON.stringify(a)).toContain(a.result);
        if (a.result === 'refused') expect(['immutable', 'not-monotonic']).toContain(a.code);
      }
      const wins = attempts.filter((a) => a.result === 'published');
      const winsByVersion = new Map<string, Attempt[]>();
      for (const w of wins) winsByVersion.set(w.version, [...(winsByVersion.get(w.version) ?? []), w]);
      for (const [version, ws] of winsByVersion) expect(ws, `winners of ${version}`).toHaveLength(1);
      expect(winsByVersion.has('1.1.0')).toBe(true);

      const estate = await openEstate(loadConfig({ store }));
      try {
        const stream = await estate.store.readStream(toolStream(tool));
        // Exactly the winners' events, once each, in a gap-free stream.
        expect(stream.map((s) => s.revision)).toEqual(stream.map((_, i) => i));
        expect(stream.map((s) => s.position).sort()).toEqual(wins.map((w) => w.position).sort());
        const events = stream.map((s) => decodeCatalogueEvent(s));
        const published = events.map((e) => (e?.type === 'ToolVersionPublished' ? e.data : null));
        for (const [i, p] of published.entries()) {
          expect(p).not.toBeNull();
          const winner = winsByVersion.get(p?.definition.version as string)?.[0];
          expect(p?.by).toBe(`worker-${winner?.worker}`);
          expect(p?.definition.description).toBe(`race tool as published by worker ${winner?.worker}`);
          // Monotonic: each version is greater than the one before it in the stream.
          if (i > 0) expect(Number(p?.definition.version.split('.')[1])).toBeGreaterThan(Number(published[i - 1]?.definition.version.split('.')[1]));
        }
        // Replay: a fresh read model from the log agrees with the winners; latest is the last winner.
        // Every win readable from the log first: on PostgreSQL another test's open transaction holds it back a while.
        await untilAllReadable(estate.store, stream.map((s) => s.position));
        const reader = estate.reader();
        await reader.catchUp();
        const versions = reader.catalogue.versions(tool).map((v) => v.version);
        expect(versions).toEqual([...winsByVersion.keys()].sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1])));
        expect(reader.catalogue.latest(tool)?.version).toBe(versions[versions.length - 1]);
      } finally {
        await estate.close();
      }
    });

    it('the CLI: 8 `estate publish` processes with different content for 1.0.0 — exactly one exits 0, the rest exit 3 naming immutability', { timeout: 120_000 }, async () => {
      const store = storeFor('cli-race.db');
      const tool = `cli${toolBase}`;
      const files = Array.from({ length: WORKERS }, (_, w) => {
        const file = join(dir, `${tool}-def-${w}.json`);
        writeFileSync(file, JSON.stringify({ ...raceDefinition(0, String(w), tool), version: '1.0.0' }));
        return file;
      });
      const results = await Promise.all(files.map((f) => run(['bin/estate.js', 'publish', f, '--json', '--store', store])));
      const codes = results.map((r) => r.code).sort();
      expect(codes).toEqual([0, 3, 3, 3, 3, 3, 3, 3]);
      for (const r of results.filter((x) => x.code === 3)) {
        expect(JSON.parse(r.stdout)).toMatchObject({ result: 'refused', error: { code: 'immutable' } });
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(r.stderr).toMatch(new RegExp(`^estate: refused: immutability: ${tool.replace('.', '\\.')}@1\\.0\\.0`));
      }
    });
  });

};

raceSuite('one SQLite file', (file) => `sqlite:${join(dir, file)}`);
const pgUrl = await requirePostgres('publish race on PostgreSQL');
if (pgUrl) raceSuite('PostgreSQL', () => pgUrl);
