import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DomainError } from '#domain/errors';
import { openEventStore } from '#store/open-store';

describe('openEventStore', () => {
  const dirs: string[] = [];
  const cwd = process.cwd();
  afterEach(() => {
    process.chdir(cwd);
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('opens a memory store', async () => {
    const store = await openEventStore('memory:');
    expect(store.kind).toBe('memory');
    await store.close();
  });

  it('opens a SQLite file, resolving a relative path from the working directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'estate-open-'));
    dirs.push(dir);
    process.chdir(dir);
    const store = await openEventStore('sqlite:.estate/estate.db');
    expect(store.kind).toBe('sqlite');
    await store.append('tool-a', [{ type: 'A', data: {} }], { expectedRevision: 'no_stream' });
    await store.close();
    expect(existsSync(join(dir, '.estate', 'estate.db'))).toBe(true);
  });

  it('opens a SQLite file at an absolute path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'estate-open-'));
    dirs.push(dir);
    const path = join(dir, 'abs.db');
    const store = await openEventStore(`sqlite:${path}`);
    await store.close();
    expect(existsSync(path)).toBe(true);
  });

  it.each(['mysql://localhost/db', 'sqlite:', 'memory', '', 'file:estate.db'])('refuses %j as a usage error', async (url) => {
    const error = await openEventStore(url).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({
      kind: 'usage',
      code: 'unknown-store',
      message: `unknown store URL '${url}': use sqlite:<path>, memory:, postgres://..., kurrentdb://...`,
    });
  });

  it('says an unknown URL without its password', async () => {
    // A typo in the scheme printed the password as typed.
    await expect(openEventStore('postgress://estate:secret@db/x')).rejects.toMatchObject({
      code: 'unknown-store',
      message: "unknown store URL 'postgress://estate:***@db/x': use sqlite:<path>, memory:, postgres://..., kurrentdb://...",
    });
  });

  it.each(['/tmp/e.db', './estate.db', '../x/estate.sqlite', 'estate.db'])('a bare path %j is refused with the URL meant', async (url) => {
    await expect(openEventStore(url)).rejects.toMatchObject({ kind: 'usage', code: 'unknown-store', message: expect.stringContaining(`(a SQLite file: --store sqlite:${url})`) });
  });
});
