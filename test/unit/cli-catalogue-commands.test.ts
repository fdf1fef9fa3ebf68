/**
 * The local adapter of the CLI's CatalogueCommands port on a memory store: the values the verbs print, and the
 * definition errors answered as refusals rather than thrown (so --json shows the verdict shape for them).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { DomainError } from '#domain/errors';
import { loadConfig } from '#config';
import { openEstate } from '#compose/estate';
import { localCatalogueCommands } from '#cli/commands/local';
import type { CatalogueCommands } from '#cli/commands/port';
import { apiBase } from '#cli/commands/http';
import { parseRef, parseToolRef } from '#cli/ref';
import { aRawDefinition } from '../fixtures/builders.ts';

const source = (raw: unknown, file = 'tools/x.json') => ({ file, raw });
const minor = () => aRawDefinition({ version: '1.1.0', inputSchema: { ...(aRawDefinition().inputSchema as object), properties: { ...((aRawDefinition().inputSchema as { properties: object }).properties), note: { type: 'string' } } } });

describe('local CatalogueCommands', () => {
  let catalogue: CatalogueCommands;
  beforeEach(async () => {
    catalogue = localCatalogueCommands(await openEstate(loadConfig({ store: 'memory:', by: 'tester' }, {})));
  });
  afterEach(() => catalogue.close());

  it('publishes, answers unchanged for the same content, and lists, shows and tells the history', async () => {
    const first = await catalogue.publish(source(aRawDefinition()));
    expect(first.refusal).toBeUndefined();
    expect(first.json).toMatchObject({ result: 'published', name: 'payments.lookup', version: '1.0.0', level: 'initial' });
    expect((await catalogue.publish(source(aRawDefinition()))).json.result).toBe('unchanged');
    expect(await catalogue.list({ includeDeprecated: false })).toEqual([{ name: 'payments.lookup', version: '1.0.0', title: 'Look up a payment', status: 'active' }]);
    expect(await catalogue.show({ name: 'payments.lookup' })).toMatchObject({ name: 'payments.lookup', version: '1.0.0', status: 'active', publishedBy: 'tester' });
    expect((await catalogue.history('payments.lookup')).map((v) => v.version)).toEqual(['1.0.0']);
  });

  it('check says would-publish and appends nothing', async () => {
    const v = await catalogue.check(source(aRawDefinition()));
    expect(v.json.result).toBe('would-publish');
    expect(await catalogue.list({ includeDeprecated: false })).toEqual([]);
  });

  it('a definition breaking a rule is a refusal naming the file, not an exception', async () => {
    const v = await catalogue.publish(source(aRawDefinition({ name: 'Not A Name' }), 'tools/bad.json'));
    expect(v.refusal).toBe('refused');
    // The name is not one, so it is not given back; the version is well formed, so it is (found by a probe: both null).
    expect(v.json).toMatchObject({ result: 'refused', name: null, version: '1.0.0', level: null, reasons: [] });
    expect(v.json.error?.message).toMatch(/^tools\/bad\.json: /);
    // A body that is not an object at all: refused the same way.
    expect((await catalogue.check(source([1, 2]))).refusal).toBe('refused');
  });

  it('a guard refusal carries the verdict with its name and reasons', async () => {
    await catalogue.publish(source(aRawDefinition()));
    const changed = aRawDefinition({ version: '1.0.1', inputSchema: { type: 'object', properties: { reference: { type: 'number' } }, required: ['reference'] } });
    const v = await catalogue.publish(source(changed));
    expect(v.refusal).toBe('refused');
    expect(v.json).toMatchObject({ result: 'refused', name: 'payments.lookup', version: '1.0.1' });
  });

  it('deprecate hides a version from list unless asked, and a second deprecate is unchanged', async () => {
    await catalogue.publish(source(aRawDefinition()));
    expect(await catalogue.deprecate({ name: 'payments.lookup', version: '1.0.0' }, 'old')).toMatchObject({ result: 'deprecated' });
    expect((await catalogue.deprecate({ name: 'payments.lookup', version: '1.0.0' }, 'old')).result).toBe('unchanged');
    expect(await catalogue.list({ includeDeprecated: false })).toEqual([]);
    expect((await catalogue.list({ includeDeprecated: true }))[0]).toMatchObject({ status: 'deprecated', deprecated: { reason: 'old' } });
  });

  it('list with a principal is that principal\'s view', async () => {
    await catalogue.publish(source(aRawDefinition()));
    const insider = makePrincipal({ tenant: 'acme', scopes: ['payments.read'], clearance: 'confidential' });
    const outsider = makePrincipal({ tenant: 'other', scopes: [], clearance: null });
    expect((await catalogue.list({ principal: insider, includeDeprecated: false })).map((t) => t.name)).toEqual(['payments.lookup']);
    expect(await catalogue.list({ principal: outsider, includeDeprecated: false })).toEqual([]);
  });

  it('diff of two published versions classifies the change; an unknown version is not found', async () => {
    await catalogue.publish(source(aRawDefinition()));
    await catalogue.publish(source(minor()));
    expect((await catalogue.diff('payments.lookup@1.0.0', 'payments.lookup@1.1.0')).level).toBe('minor');
    await expect(catalogue.diff('payments.lookup@9.9.9', 'payments.lookup@1.0.0')).rejects.toMatchObject({ kind: 'not-found', code: 'unknown-version' });
    await expect(catalogue.diff('payments.lookup', 'payments.lookup@1.0.0')).rejects.toMatchObject({ kind: 'usage', code: 'bad-ref' });
  });

  it('show and history of an unknown tool are not found; calls of an unknown run are none', async () => {
    await expect(catalogue.show({ name: 'nope' })).rejects.toMatchObject({ kind: 'not-found', code: 'unknown-tool' });
    await expect(catalogue.history('nope')).rejects.toBeInstanceOf(DomainError);
    expect(await catalogue.calls('no-such-run')).toEqual([]);
    expect(await catalogue.runs({})).toEqual([]);
  });

  it('replay at a position is the catalogue as it was then', async () => {
    const first = await catalogue.publish(source(aRawDefinition()));
    await catalogue.publish(source(minor()));
    const then = await catalogue.replay(first.json.position as string, false);
    expect(then.tools.map((t) => t.version)).toEqual(['1.0.0']);
    expect(then.eventCount).toBe(1);
  });
});

describe('CLI references and --server', () => {
  it('parseRef takes the last @ and refuses an empty side', () => {
    expect(parseRef('a.b@1.0.0', true)).toEqual({ name: 'a.b', version: '1.0.0' });
    expect(parseRef('a.b', false)).toEqual({ name: 'a.b' });
    for (const bad of ['a.b', '@1.0.0', 'a.b@', '@']) expect(() => parseRef(bad, true)).toThrow(/expected <name>@<version>/);
  });

  it('parseToolRef wants <ns>.<tool> and cuts a long ref in its message', () => {
    expect(parseToolRef('everything.echo')).toEqual({ ns: 'everything', tool: 'everything.echo' });
    for (const bad of ['.echo', 'everything.', 'everything']) expect(() => parseToolRef(bad)).toThrow(/expected <ns>\.<tool>/);
    expect(() => parseToolRef('x'.repeat(10_000))).toThrow(/^'x{80}': expected/);
  });

  it('apiBase accepts http(s) only and drops a trailing /mcp', () => {
    expect(apiBase('https://estate.example/mcp/')).toBe('https://estate.example');
    expect(apiBase('http://127.0.0.1:8080/base/')).toBe('http://127.0.0.1:8080/base');
    for (const bad of ['not a url', 'file:///etc/passwd', 'javascript:alert(1)', 'ftp://x/']) expect(() => apiBase(bad)).toThrow(DomainError);
  });
});
