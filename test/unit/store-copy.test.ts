/** `estate copy`'s core on the embedded stores: order, times, resume, refusals, and a comparison that can fail. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventStore, StoredEvent } from '#app/ports';
import { DomainError } from '#domain/errors';
import { copyStore } from '#ops/store-copy';
import { compareSummaries, summarizeStore } from '#ops/store-summary';
import { createMemoryEventStore } from '#store/memory-event-store';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import { seedHistory } from '../fixtures/estate-history.ts';

const dirs: string[] = [];
const stores: EventStore[] = [];
const sqliteAt = (): { store: EventStore; file: string } => {
  const dir = mkdtempSync(join(tmpdir(), 'estate-copy-'));
  dirs.push(dir);
  const file = join(dir, 'e.db');
  const store = createSqliteEventStore({ path: file });
  stores.push(store);
  return { store, file };
};
const sqlite = (): EventStore => sqliteAt().store;
/** Changes a SQLite store's events around the store, as only a hand with SQL could. */
const rawSql = (file: string, sql: string): void => {
  const db = new Database(file);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
};
const memory = (): EventStore => {
  const store = createMemoryEventStore();
  stores.push(store);
  return store;
};

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const everything = async (store: EventStore): Promise<StoredEvent[]> => {
  const out: StoredEvent[] = [];
  for (;;) {
    const page = await store.readAll({ after: out.at(-1)?.position ?? null, limit: 700 });
    if (page.length === 0) return out;
    out.push(...page);
  }
};
const shape = (events: StoredEvent[]) => events.map((e) => [e.streamId, e.revision, e.type, e.data, e.recordedAt]);

const rejection = async (p: Promise<unknown>): Promise<DomainError> => {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return e as DomainError;
  }
  throw new Error('expected a refusal');
};

describe('copyStore', () => {
  it('copies every event in order with its stream, revision, type, data and recorded time; the projections match', async () => {
    const from = memory();
    await seedHistory(from, 1_000);
    const to = sqlite();
    const progress: number[] = [];
    const result = await copyStore(from, to, { batchSize: 128, onProgress: (p) => progress.push(p.copied) });
    expect(result).toMatchObject({ copied: 1_000, appended: 1_000, resumedAfter: 0 });
    expect(progress).toEqual([128, 256, 384, 512, 640, 768, 896, 1_000]);
    expect(shape(await everything(to))).toEqual(shape(await everything(from)));
    const [a, b] = [await summarizeStore(from), await summarizeStore(to)];
    expect(compareSummaries(a, b)).toEqual([]);
    expect(a).toMatchObject({ events: 1_000, undecodable: 0, sizes: { tools: 40, upstreams: 1 } });
    expect(a.byFamily).toEqual({ tool: 95, upstream: 2, run: 903, other: 0 });
  });

  it('refuses a non-empty target without --resume and writes nothing', async () => {
    const from = memory();
    await seedHistory(from, 300);
    const to = sqlite();
    await to.append('tool-someone.else', [{ type: 'Note', data: {} }], { expectedRevision: 'no_stream' });
    const e = await rejection(copyStore(from, to));
    expect(e.code).toBe('target-not-empty');
    expect((await everything(to)).length).toBe(1);
  });

  it('resumes after an interruption: no duplicate, no gap, the same log', async () => {
    const from = memory();
    await seedHistory(from, 1_000);
    const to = sqlite();
    let batches = 0;
    const interrupted = copyStore(from, to, {
      batchSize: 100,
      onProgress: () => {
        if (++batches === 4) throw new Error('killed');
      },
    });
    await expect(interrupted).rejects.toThrow('killed');
    expect((await everything(to)).length).toBe(400);
    const result = await copyStore(from, to, { batchSize: 100, resume: true });
    expect(result).toMatchObject({ resumedAfter: 400, appended: 600, copied: 1_000 });
    expect(shape(await everything(to))).toEqual(shape(await everything(from)));
    // Resuming a finished copy appends nothing.
    expect(await copyStore(from, to, { resume: true })).toMatchObject({ appended: 0, copied: 1_000 });
  });

  it('refuses to resume into a store that is not a copy of the source', async () => {
    const from = memory();
    await seedHistory(from, 300);
    const to = sqlite();
    await to.append('tool-copy.tool0', [{ type: 'ToolVersionPublished', data: { forged: true } }], { expectedRevision: 'no_stream' });
    const e = await rejection(copyStore(from, to, { resume: true }));
    expect(e.code).toBe('target-not-a-copy');
    expect((await everything(to)).length).toBe(1);
  });

  it('refuses to resume into a copy of another source, even when its last event is also in this source', async () => {
    // Two stores with a shared history: the same `y` stream, written with the same times, after a different `x`.
    const at = '2025-01-01T00:00:00.000Z';
    const note = (data: unknown) => ({ type: 'Note', data, recordedAt: at });
    const a = memory();
    await a.append('x', [note({ v: 'a' })], { expectedRevision: 'no_stream' });
    await a.append('y', [note(0), note(1)], { expectedRevision: 'no_stream' });
    await a.append('z', [note(0)], { expectedRevision: 'no_stream' });
    const b = memory();
    await b.append('x', [note({ v: 'b' })], { expectedRevision: 'no_stream' });
    await b.append('y', [note(0), note(1)], { expectedRevision: 'no_stream' });
    const to = sqlite();
    await copyStore(b, to);
    const e = await rejection(copyStore(a, to, { resume: true }));
    expect([e.code, e.message]).toEqual([
      'target-not-a-copy',
      "copy --resume: the target's event 1 (x@0, Note) is not the source's (x@0, Note, source position 1) as it is in the target: the target is not an interrupted copy of this source",
    ]);
    expect((await everything(to)).length).toBe(3);

    // A target holding more than the source is no prefix of it either.
    const bsFirst = memory();
    await bsFirst.append('x', [note({ v: 'b' })], { expectedRevision: 'no_stream' });
    const e2 = await rejection(copyStore(bsFirst, to, { resume: true }));
    expect([e2.code, e2.message]).toEqual(['target-not-a-copy', 'copy --resume: the target holds more events than the source (1 in the source): the target is not an interrupted copy of this source']);

    // A genuine prefix is checked whole, and says how far the check has come.
    const checked: number[] = [];
    const prefix = sqlite();
    await copyStore(b, prefix);
    expect(await copyStore(b, prefix, { resume: true, onChecked: (n) => checked.push(n) })).toMatchObject({ resumedAfter: 3, appended: 0 });
    expect(checked).toEqual([3]);
  });

  it('refuses an empty target that holds a projection snapshot of another log, and writes nothing', async () => {
    // Its events deleted by hand, its snapshot left: a server on the copy restored it (position 200021 of the old log)
    // and served 61 tools of a copied log of 40.
    const from = memory();
    await seedHistory(from, 300);
    const { store: to, file } = sqliteAt();
    await to.append('tool-old.one', [{ type: 'Note', data: {} }], { expectedRevision: 'no_stream' });
    const chunks = async function* () {
      yield '[]';
    };
    const head = { name: 'catalogue', version: 'v', position: '1', eventCount: 1, checksum: 'c', chunkCount: 1, chars: 2, writtenAt: '2025-01-01T00:00:00.000Z' };
    await to.snapshots!.write(chunks(), () => head);
    rawSql(file, 'DELETE FROM events');
    const e = await rejection(copyStore(from, to));
    expect([e.code, e.message]).toEqual([
      'target-has-snapshots',
      "copy: the target holds no events but a catalogue snapshot (position 1, 1 events, written 2025-01-01T00:00:00.000Z) made from another log, which a server on the copy would restore; delete the target's projection_snapshots rows, or copy into a new store",
    ]);
    expect(await everything(to)).toEqual([]);
  });

  /** A source of 10 events, each its own batch below: stream `a` at positions 1-6, `b` at 7-10. */
  const twoStreams = async (): Promise<{ from: EventStore; file: string }> => {
    const { store: from, file } = sqliteAt();
    await from.append('a', [0, 1, 2, 3, 4, 5].map((i) => ({ type: 'Note', data: { i } })), { expectedRevision: 'no_stream' });
    await from.append('b', [0, 1, 2, 3].map((i) => ({ type: 'Note', data: { i } })), { expectedRevision: 'no_stream' });
    return { from, file };
  };

  it('refuses a source stream that skips a revision, by name, and never writes a renumbered event', async () => {
    // In one batch: the store numbers a request's events itself, so `a`@4 used to be written as `a`@3, silently.
    const { from, file } = await twoStreams();
    rawSql(file, 'DELETE FROM events WHERE stream_id = \'a\' AND revision = 3');
    const to = sqlite();
    const e = await rejection(copyStore(from, to, { batchSize: 100 }));
    expect(e.code).toBe('source-gap');
    expect(e.message).toBe("copy: the source's stream a has no revision 3: its event a@4 (Note, source position 5) follows revision 2; a copy would renumber it, so nothing of this batch was written");
    expect(await everything(to)).toEqual([]);

    // Across batches, the target's refusal was blamed on the target ("something else writes to the target").
    const to2 = sqlite();
    const e2 = await rejection(copyStore(from, to2, { batchSize: 3 }));
    expect([e2.code, e2.message]).toEqual(['source-gap', "copy: the source's stream a has no revision 3: its event a@4 (Note, source position 5) follows revision 2; a copy would renumber it, so nothing of this batch was written"]);
    expect(shape(await everything(to2))).toEqual(shape((await everything(from)).slice(0, 3)));
  });

  it('refuses a source stream that does not start at revision 0, naming the source, not the target', async () => {
    const { from, file } = await twoStreams();
    rawSql(file, 'DELETE FROM events WHERE stream_id = \'b\' AND revision < 2');
    const to = sqlite();
    const e = await rejection(copyStore(from, to, { batchSize: 3 }));
    expect([e.code, e.message]).toEqual(['source-gap', "copy: the source's stream b has no revision 1: its event b@2 (Note, source position 9) follows nothing; a copy would renumber it, so nothing of this batch was written"]);
    expect((await everything(to)).length).toBe(6);
  });

  it('refuses a source event whose recorded time is not a time, naming it, and leaves the batches before it', async () => {
    const { from, file } = await twoStreams();
    rawSql(file, "UPDATE events SET recorded_at = 'yesterday' WHERE position = 8");
    const to = sqlite();
    const e = await rejection(copyStore(from, to, { batchSize: 3 }));
    expect([e.code, e.message]).toEqual(['source-event-invalid', "copy: the source's event b@1 (Note, source position 8) has a recorded time that is not a time: 'yesterday'; nothing of this batch was written"]);
    expect(shape(await everything(to))).toEqual(shape((await everything(from)).slice(0, 6)));
  });

  it('refuses a NUL in a source stream id or type by name, before its batch, and resumes once the source is fixed', async () => {
    // PostgreSQL's text holds no NUL: the batch failed there with 'invalid byte sequence for encoding "UTF8": 0x00',
    // naming no event. Estate never writes one (stream ids are made of checked names and run ids; types are its own).
    const { from, file } = await twoStreams();
    rawSql(file, "UPDATE events SET stream_id = 'b' || char(0) || 'x' WHERE stream_id = 'b'");
    const to = sqlite();
    const e = await rejection(copyStore(from, to, { batchSize: 3 }));
    expect([e.kind, e.code, e.message]).toEqual([
      'conflict',
      'source-event-invalid',
      'copy: the source\'s event "b\\u0000x"@0 ("Note", source position 7) has a NUL character in its stream id, which Estate ' +
        'never writes and PostgreSQL cannot store; nothing of this batch was written (correct the source, then --resume)',
    ]);
    expect(shape(await everything(to))).toEqual(shape((await everything(from)).slice(0, 6)));

    rawSql(file, "UPDATE events SET stream_id = 'b' WHERE position > 6; UPDATE events SET type = 'No' || char(0) || 'te' WHERE position = 8");
    const e2 = await rejection(copyStore(from, to, { batchSize: 3, resume: true }));
    expect([e2.code, e2.message]).toEqual([
      'source-event-invalid',
      'copy: the source\'s event "b"@1 ("No\\u0000te", source position 8) has a NUL character in its type, which Estate ' +
        'never writes and PostgreSQL cannot store; nothing of this batch was written (correct the source, then --resume)',
    ]);
    expect((await everything(to)).length).toBe(6);

    rawSql(file, "UPDATE events SET type = 'Note' WHERE position = 8");
    expect(await copyStore(from, to, { batchSize: 3, resume: true })).toMatchObject({ resumedAfter: 6, appended: 4, copied: 10 });
    expect(shape(await everything(to))).toEqual(shape(await everything(from)));
  });

  it('does not refuse a NUL inside event data (JSON text carries it as an escape; PostgreSQL\'s json column keeps it)', async () => {
    const { store: from } = sqliteAt();
    await from.append('a', [{ type: 'Note', data: { text: 'x\u0000y', ['k\u0000']: 1 } }], { expectedRevision: 'no_stream' });
    const to = sqlite();
    await copyStore(from, to);
    expect(shape(await everything(to))).toEqual(shape(await everything(from)));
  });

  it('refuses a batch size out of range', async () => {
    for (const batchSize of [0, -1, 1.5, 10_001, Number.NaN]) {
      expect((await rejection(copyStore(memory(), memory(), { batchSize }))).code).toBe('bad-batch-size');
    }
  });
});

describe('the closing comparison', () => {
  it('says how far its read of a log has come, page by page', async () => {
    const from = memory();
    await seedHistory(from, 1_000);
    const heard: number[] = [];
    const summary = await summarizeStore(from, 300, (events) => heard.push(events));
    expect(heard).toEqual([300, 600, 900, 1_000]);
    expect(summary.events).toBe(1_000);
  });

  it('finds a changed payload, a changed time and a missing event', async () => {
    const from = memory();
    await seedHistory(from, 300);
    const source = await summarizeStore(from);
    const events = await everything(from);

    const rewrite = async (change: (e: StoredEvent, i: number) => StoredEvent | null): Promise<string[]> => {
      const to = memory();
      for (const [i, e] of events.entries()) {
        const c = change(e, i);
        if (c) await to.append(c.streamId, [{ type: c.type, data: c.data, recordedAt: c.recordedAt }], { expectedRevision: 'any' });
      }
      return compareSummaries(source, await summarizeStore(to));
    };

    expect(await rewrite((e) => e)).toEqual([]);
    const payload = await rewrite((e) => (e.type === 'ToolCalled' && e.revision === 1 && e.streamId.startsWith('run-run3@') ? { ...e, data: { ...(e.data as object), outcome: 'timeout' } } : e));
    expect(payload).toEqual(['log digest differs (an event\'s stream, revision, type, data or time)', 'runs projection differs']);
    const time = await rewrite((e, i) => (i === 0 ? { ...e, recordedAt: '2001-01-01T00:00:00.000Z' } : e));
    expect(time).toEqual(['log digest differs (an event\'s stream, revision, type, data or time)']);
    const missing = await rewrite((e) => (e.type === 'ToolVersionRetired' && e.streamId === 'tool-copy.tool4' ? null : e));
    expect(missing).toEqual(expect.arrayContaining(['events: source 300, target 299', 'tool events: source 95, target 94', 'catalogue projection differs']));
  });
});
