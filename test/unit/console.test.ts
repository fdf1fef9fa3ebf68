/**
 * The console's rules in process: server-side search and paging at 10,000 tools, the reasons placed on the diff rows
 * they concern, escaping, the lifecycle scope refusing an action (nothing changes), and the upstream port.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { CatalogueReader } from '#app/catalogue-reader';
import { CommandHandler } from '#app/command-handler';
import type { Authenticator } from '#auth/authenticator';
import { tokenAccess, type ConsoleAccess, type ConsoleViewer, type SignInSettings } from '#console/access';
import { streamsPerViewer } from '#console/live';
import { createConsole } from '#console/console';
import type { UpstreamConsoleSource } from '#console/upstreams';
import { esc, html } from '#console/html';
import { PAGE_SIZE, parseCatalogueQuery, searchCatalogue, searchTextMadeAnew } from '#console/catalogue-search';
import { cataloguePage } from '#console/pages';
import { upstreamsPage } from '#console/upstream-page';
import { diffLines, placeReasons, printWithPaths } from '#console/schema-diff';
import { classifyDefinition } from '#domain/classify';
import { DomainError } from '#domain/errors';
import { createMemoryEventStore } from '#store/memory-event-store';
import { CatalogueProjection } from '#projections/catalogue';
import { aDefinition, deprecatedEvent, publishedEvent } from '../fixtures/builders.ts';

const bigCatalogue = (n: number): CatalogueProjection => {
  const c = new CatalogueProjection();
  for (let i = 0; i < n; i++) {
    const ns = `team${i % 20}`;
    const def = aDefinition({ name: `${ns}.tool${i}`, handler: `${ns}.tool${i}`, title: `Tool number ${i}`, description: i % 1000 === 7 ? 'Finds the needle.' : 'Does a thing.', access: { classification: i % 2 === 0 ? 'public' : 'internal' } });
    c.apply({ position: String(i + 1), event: publishedEvent(def) });
  }
  return c;
};

/** A catalogue of `defs`, published in that order. */
const catalogueOf = (defs: ReturnType<typeof aDefinition>[]): CatalogueProjection => {
  const c = new CatalogueProjection();
  defs.forEach((d, i) => c.apply({ position: String(i + 1), event: publishedEvent(d) }));
  return c;
};

/** The names of the tools a search for `needle` finds in a catalogue of `defs`. */
const searchOf = (defs: ReturnType<typeof aDefinition>[]): ((needle: string) => string[]) => {
  const c = catalogueOf(defs);
  return (needle) => searchCatalogue(c, parseCatalogueQuery(new URLSearchParams({ q: needle }))).rows.map((v) => v.name);
};

describe('console catalogue at 10,000 tools', () => {
  const catalogue = bigCatalogue(10_000);

  it('searches name, title and description on the server and returns one page', () => {
    const all = searchCatalogue(catalogue, parseCatalogueQuery(new URLSearchParams()));
    expect(all.total).toBe(10_000);
    expect(all.rows).toHaveLength(PAGE_SIZE);
    const needle = searchCatalogue(catalogue, parseCatalogueQuery(new URLSearchParams('q=NEEDLE')));
    expect(needle.total).toBe(10);
    const byTitle = searchCatalogue(catalogue, parseCatalogueQuery(new URLSearchParams('q=number 9999')));
    expect(byTitle.rows.map((r) => r.name)).toEqual(['team19.tool9999']);
    const filtered = searchCatalogue(catalogue, parseCatalogueQuery(new URLSearchParams('namespace=team3&classification=internal')));
    expect(filtered.total).toBe(500);
    expect(filtered.rows.every((r) => r.name.startsWith('team3.') && r.access.classification === 'internal')).toBe(true);
  });

  it('pages through the results and never sends the whole catalogue', () => {
    const page3 = searchCatalogue(catalogue, parseCatalogueQuery(new URLSearchParams('page=3')));
    const page2 = searchCatalogue(catalogue, parseCatalogueQuery(new URLSearchParams('page=2')));
    expect(page3.rows[0]?.name).not.toBe(page2.rows[0]?.name);
    const html = cataloguePage(catalogue, parseCatalogueQuery(new URLSearchParams('page=2'))).text;
    expect(html).toContain('page 2 of 200');
    expect(html).toContain('rel="next" href="/console/?page=3"');
    expect(html.length).toBeLessThan(64 * 1024);
  });

  it('turns the namespace filter into a text field when there are more namespaces than a list should hold', () => {
    const wide = new CatalogueProjection();
    for (let i = 0; i < 10_000; i++) {
      const def = aDefinition({ name: `ns${i}.tool`, handler: `ns${i}.tool` });
      wide.apply({ position: String(i + 1), event: publishedEvent(def) });
    }
    const page = cataloguePage(wide, parseCatalogueQuery(new URLSearchParams('namespace=ns42'))).text;
    expect(page).toContain('<input name="namespace" value="ns42"');
    expect(page).toContain('1 tool matches');
    expect(page.length).toBeLessThan(64 * 1024);
  });

  it('searches the catalogue as it is now: every change since the last search is seen', () => {
    const c = bigCatalogue(100);
    let position = 100;
    const apply = (event: Parameters<CatalogueProjection['apply']>[0]['event']): void => void c.apply({ position: String(++position), event });
    const find = (query: string) => searchCatalogue(c, parseCatalogueQuery(new URLSearchParams(query)));
    expect(find('q=haystack').total).toBe(0);
    expect(find('status=deprecated').total).toBe(0);
    // A newer version's text is the tool's text: the old text is no longer found, the new one is.
    apply(publishedEvent(aDefinition({ name: 'team1.tool1', version: '1.1.0', handler: 'team1.tool1', title: 'Renamed', description: 'Now in the HAYSTACK.' })));
    expect(find('q=haystack').rows.map((v) => [v.name, v.version])).toEqual([['team1.tool1', '1.1.0']]);
    expect(find('q=tool number 1').rows.map((v) => v.name)).not.toContain('team1.tool1');
    // A lifecycle step moves the status the filter reads.
    apply(deprecatedEvent('team1.tool1', '1.1.0'));
    expect(find('status=deprecated&q=haystack').rows.map((v) => [v.name, v.status])).toEqual([['team1.tool1', 'deprecated']]);
    // A new tool in a new namespace: counted, in name order, and offered as a namespace.
    apply(publishedEvent(aDefinition({ name: 'aardvark.first', handler: 'aardvark.first', description: 'haystack too' })));
    const all = find('');
    expect(all.total).toBe(101);
    expect(all.rows[0]?.name).toBe('aardvark.first');
    expect(all.namespaces).toContain('aardvark');
    expect(find('namespace=aardvark&q=HAYSTACK').total).toBe(1);
  });

  it('filters mirrored tools from local ones (SPEC section 8: upstream), with the other filters and a search', () => {
    const c = catalogueOf([
      aDefinition({ name: 'files.read', handler: 'upstream:files/read', description: 'Reads a file.', access: { classification: 'public' } }),
      aDefinition({ name: 'files.write', handler: 'upstream:files/write', description: 'Writes a file.', access: { classification: 'internal' } }),
      aDefinition({ name: 'files.local', handler: 'files.local', description: 'Reads a local file.' }),
      aDefinition({ name: 'pay.lookup', handler: 'pay.lookup', description: 'Looks a payment up.' }),
    ]);
    const names = (query: string) => searchCatalogue(c, parseCatalogueQuery(new URLSearchParams(query))).rows.map((v) => v.name);
    expect(names('upstream=yes')).toEqual(['files.read', 'files.write']);
    expect(names('upstream=no')).toEqual(['files.local', 'pay.lookup']);
    expect(names('upstream=yes&q=reads')).toEqual(['files.read']);
    expect(names('upstream=no&q=reads')).toEqual(['files.local']);
    expect(names('upstream=yes&classification=internal')).toEqual(['files.write']);
    expect(names('upstream=no&namespace=files')).toEqual(['files.local']);
  });

  it('finds a needle in the tool that holds it, whatever lower-casing does to the lengths before it', () => {
    // U+0130 lower-cases to two code units: eight of them put every later tool's text eight units further on.
    const find = searchOf([
      aDefinition({ name: 'a.one', handler: 'a.one', title: 'İİİİİİİİ', description: 'ends with the needle' }),
      aDefinition({ name: 'b.two', handler: 'b.two', title: 'Two', description: 'nothing here' }),
      aDefinition({ name: 'c.three', handler: 'c.three', title: 'NEEDLE in the title', description: 'x' }),
    ]);
    expect(find('needle')).toEqual(['a.one', 'c.three']);
    expect(find('i̇i̇')).toEqual(['a.one']);
    expect(find('two')).toEqual(['b.two']);
  });

  it('never matches across two fields, even for a needle holding the text index\'s separators', () => {
    const find = searchOf([
      aDefinition({ name: 'z.x', handler: 'z.x', title: 'y', description: 'ends in x' }),
      aDefinition({ name: 'z.w', handler: 'z.w', title: 't', description: 'holds x\u0000y inside' }),
      aDefinition({ name: 'z.v', handler: 'z.v', title: 'u', description: 'plain' }),
      aDefinition({ name: 'z.y', handler: 'z.y', title: 'u', description: 'd' }),
    ]);
    expect(find('x\u0000y')).toEqual(['z.w']);
    expect(find('x\u0001z.y')).toEqual([]);
    expect(find('x')).toEqual(['z.w', 'z.x']);
  });

  it('finds needles in a catalogue whose text spans several of the index\'s strings', () => {
    // Three 5,000,000-character descriptions: more than one string of the index holds (2^23 characters).
    const long = (marker: string): string => `${'a'.repeat(2_500_000)}${marker}${'b'.repeat(2_500_000)}`;
    const find = searchOf([
      aDefinition({ name: 'big.one', handler: 'big.one', description: long('First-Marker') }),
      aDefinition({ name: 'big.three', handler: 'big.three', description: long('third-marker') }),
      aDefinition({ name: 'big.two', handler: 'big.two', description: long('SECOND-MARKER') }),
      aDefinition({ name: 'small.four', handler: 'small.four', description: 'b then a' }),
    ]);
    expect(find('second-marker')).toEqual(['big.two']);
    expect(find('third-marker')).toEqual(['big.three']);
    expect(find('marker')).toEqual(['big.one', 'big.three', 'big.two']);
    // Across the end of one tool's text and the start of the next: never a match.
    expect(find('bbig')).toEqual([]);
    expect(find('b then')).toEqual(['small.four']);
  });

  it('after a change, the next text search lower-cases the chunk the change fell in, not the catalogue', () => {
    const c = bigCatalogue(10_000);
    const find = (needle: string) => searchCatalogue(c, parseCatalogueQuery(new URLSearchParams({ q: needle }))).rows.map((v) => `${v.name}@${v.version}`);
    expect(find('needle')).toHaveLength(10);
    expect(searchTextMadeAnew(c)).toBe(10_000);
    let position = 10_000;
    // A new version with a new description, in the middle of the catalogue.
    c.apply({ position: String(++position), event: publishedEvent(aDefinition({ name: 'team7.tool5007', version: '1.1.0', handler: 'team7.tool5007', description: 'A haystack now.' })) });
    expect(find('haystack')).toEqual(['team7.tool5007@1.1.0']);
    // One chunk: ~512 tools on average, at most 2,048 (+1 where a new tool moves a cut made at that cap).
    expect(searchTextMadeAnew(c)).toBeLessThanOrEqual(2_049);
    // A new tool between two others.
    c.apply({ position: String(++position), event: publishedEvent(aDefinition({ name: 'team3.tool5000a', handler: 'team3.tool5000a', description: 'Another haystack.' })) });
    expect(find('haystack')).toEqual(['team3.tool5000a@1.0.0', 'team7.tool5007@1.1.0']);
    expect(searchTextMadeAnew(c)).toBeLessThanOrEqual(2_049);
    // A lifecycle step changes no text: every chunk is taken over.
    c.apply({ position: String(++position), event: deprecatedEvent('team3.tool5000a', '1.0.0') });
    expect(find('haystack')).toHaveLength(2);
    expect(searchTextMadeAnew(c)).toBe(0);
  });

  it('finds what a search of every tool\'s own text finds, through any run of changes between searches', () => {
    // 2,000 tools (a few chunks), then rounds of new versions of them and new tools among them, a search after each.
    const change = fc.record({
      tool: fc.integer({ min: 0, max: 1_999 }),
      fresh: fc.boolean(),
      text: fc.constantFrom('alpha', 'Beta', 'gamma delta', 'İx', 'x\u0000y', 'ALPHA beta', 'Does a thing.'),
    });
    fc.assert(
      fc.property(fc.array(fc.array(change, { maxLength: 12 }), { minLength: 1, maxLength: 5 }), fc.constantFrom('alpha', 'beta', 'i̇x', 'x\u0000y', 'team1', 'thing', 'ta\u0000'), (rounds, needle) => {
        const c = bigCatalogue(2_000);
        let position = 2_000;
        const minor = new Map<string, number>();
        const find = () => searchCatalogue(c, parseCatalogueQuery(new URLSearchParams({ q: needle })));
        find();
        for (const round of rounds) {
          for (const { tool, fresh, text } of round) {
            // A new tool sorts right after an existing one; a new version changes an existing one's text.
            const name = `team${tool % 20}.tool${tool}${fresh ? 'x' : ''}`;
            const m = (minor.get(name) ?? 0) + 1;
            minor.set(name, m);
            c.apply({ position: String(++position), event: publishedEvent(aDefinition({ name, version: `1.${m}.0`, handler: name, description: text, title: m % 2 ? text.toUpperCase() : 'T' })) });
          }
          const expected = c.sortedTools().filter((t) => [t.name, t.title ?? '', t.description].some((s) => s.toLowerCase().includes(needle))).map((t) => t.name);
          const found = find();
          expect(found.total).toBe(expected.length);
          expect(found.rows.map((v) => v.name)).toEqual(expected.slice(0, PAGE_SIZE));
        }
      }),
      { numRuns: 60, seed: 20261208 },
    );
  });

  it('ignores out-of-range or junk query values rather than failing', () => {
    const q = parseCatalogueQuery(new URLSearchParams('page=-4&classification=secret&status=gone&upstream=maybe'));
    expect(q).toMatchObject({ page: 1, classification: '', status: '', upstream: '' });
  });
});

describe('console schema diff', () => {
  it('places a property-removed reason on the row that shows the removed property', () => {
    const a = aDefinition();
    const b = aDefinition({ version: '2.0.0', inputSchema: { type: 'object', properties: { reference: { type: 'string' } }, required: ['reference'], additionalProperties: false } });
    const { reasons } = classifyDefinition(a, b);
    const removed = reasons.find((r) => r.rule === 'property-removed');
    expect(removed).toBeDefined();
    const rows = diffLines(printWithPaths(a), printWithPaths(b));
    const placed = placeReasons(rows, reasons);
    const at = [...placed.entries()].find(([, rs]) => rs.includes(removed as never))?.[0] as number;
    const row = rows[at];
    expect(row?.kind).not.toBe('same');
    expect(row && row.kind !== 'added' ? row.left.path : '').toBe(removed?.path);
  });

  it('prints each line with its definition path', () => {
    const lines = printWithPaths({ a: { b: [1, { c: true }] } });
    expect(lines.find((l) => l.text.includes('"c": true'))?.path).toBe('a.b.1.c');
    expect(lines.map((l) => l.text).join('\n')).toBe(JSON.stringify({ a: { b: [1, { c: true }] } }, null, 2));
  });
});

describe('console html', () => {
  it('escapes interpolated text exactly once', () => {
    expect(esc(`<a href="x" onclick='y'>&`)).toBe('&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;');
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<p>${inner}${'<script>'}</p>`.text).toBe('<p><b>&lt;i&gt;</b>&lt;script&gt;</p>');
  });

  it('renders upstreams with status and the pending drift as escaped text', () => {
    const drift = { tool: 'crm.find', upstreamTool: 'Find', level: 'minor' as const, reasons: [], pinned: '1.0.0', candidateHash: 'ab12'.repeat(8), at: 't', textDiff: '-  "a"\n+  "<b>"' };
    const crm = { ns: 'crm', transport: 'http', target: 'http://crm.local/mcp', tools: 1, status: 'active', link: 'down', pending: [drift] };
    const out = upstreamsPage([crm], (tool) => tool === 'crm.find').text;
    expect(out).toContain('crm <span class="status active">active</span>');
    expect(out).toContain('<strong class="link">down</strong>');
    expect(out).toContain('<span class="ins">+  &quot;&lt;b&gt;&quot;</span>');
    expect(out).toContain('/console/api/upstreams/crm/drift/crm.find');
    expect(out).toContain(`name="candidateHash" value="${'ab12'.repeat(8)}"`);
    // Without the scope for the tool, the page shows the drift but offers no action on it.
    expect(upstreamsPage([crm], () => false).text).not.toContain('/console/api/upstreams/');
    expect(out).not.toContain('changed this tool again');
  });

  it('lists the tools refused at the last sync, escaped, with a count of those not shown', () => {
    const refused = { shown: [{ upstreamTool: '<img src=x>', tool: 'crm._img_src_x_', code: 'invalid-name', message: 'bad <b>name</b>' }], total: 3 };
    const crm = { ns: 'crm', transport: 'http', target: 'http://crm.local/mcp', tools: 1, status: 'active', link: 'up', pending: [], refused };
    const out = upstreamsPage([crm], () => true).text;
    expect(out).toContain("3 tools refused by the definition rules at this server's last sync: never offered to clients");
    expect(out).toContain('<code>&lt;img src=x&gt;</code> (as crm._img_src_x_): <span class="code">invalid-name</span>: bad &lt;b&gt;name&lt;/b&gt;');
    expect(out).toContain('and 2 more');
    expect(out).not.toContain('<img');
    expect(upstreamsPage([{ ...crm, refused: undefined }], () => true).text).not.toContain('refused by the definition rules');
  });

  it('says when the upstream changed a pending tool again and that change waits for the change window', () => {
    const drift = { tool: 'crm.find', upstreamTool: 'Find', level: 'patch' as const, reasons: [], candidateHash: 'cd'.repeat(16), at: 't', newerWaiting: '2026-12-01T00:10:00.000Z' };
    const crm = { ns: 'crm', transport: 'http', target: 'http://crm.local/mcp', tools: 1, status: 'active', link: 'up', pending: [drift] };
    const out = upstreamsPage([crm], () => true).text;
    expect(out).toContain('<strong>The upstream has changed this tool again since.</strong> That change is recorded after <time datetime="2026-12-01T00:10:00.000Z">');
    expect(out).toContain('approving now publishes what is shown here');
    // Another replica's console has not seen the newer change: it says, from the events, when one would be recorded.
    const elsewhere = upstreamsPage([{ ...crm, pending: [{ ...drift, newerWaiting: undefined, nextRecordedAfter: '2026-12-01T00:10:00.000Z' }] }], () => true).text;
    expect(elsewhere).toContain('a change the upstream makes to it now is recorded no sooner than <time datetime="2026-12-01T00:10:00.000Z">');
    expect(elsewhere).not.toContain('changed this tool again');
    // Seen by this process, the newer change is what it says.
    expect(upstreamsPage([{ ...crm, pending: [{ ...drift, nextRecordedAfter: '2026-12-01T00:10:00.000Z' }] }], () => true).text).not.toContain('no sooner than');
  });
});

describe('console lifecycle action and its scope', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  });

  /** What reached the upstream port (nothing may, without the scope). */
  const decided: string[] = [];
  const upstreams: UpstreamConsoleSource = {
    list: () => Promise.resolve([]),
    approve: (_ns, tool) => (decided.push(`approve ${tool}`), Promise.reject(new DomainError('conflict', 'drift-changed', 'not in this test'))),
    reject: (_ns, tool) => (decided.push(`reject ${tool}`), Promise.reject(new DomainError('conflict', 'drift-changed', 'not in this test'))),
  };

  const serve = async (viewer: Omit<ConsoleViewer, 'signedIn' | 'key'> | ConsoleAccess, maxStreams?: number) => {
    const access: ConsoleAccess = 'admit' in viewer ? viewer : { admit: () => Promise.resolve({ kind: 'viewer', viewer: { ...viewer, key: viewer.by, signedIn: true } }) };
    const store = createMemoryEventStore();
    const commands = new CommandHandler({ store });
    await commands.publish(aDefinition(), 'alice');
    const reader = new CatalogueReader(store);
    await reader.catchUp();
    const routes = createConsole({ reader, commands, store, access, upstreams, ...(maxStreams ? { maxStreams } : {}) });
    server = createServer((req, res) => void routes.handle(req, res, (req.url ?? '/').split('?')[0] as string));
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', () => r()));
    const { port } = server.address() as AddressInfo;
    const post = (body: unknown, path = '/console/api/tools/payments.lookup/versions/1.0.0/lifecycle'): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        const req = request(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-estate-console': '1' } }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        });
        req.on('error', reject);
        req.end(JSON.stringify(body));
      });
    const events = (headers: Record<string, string> = {}): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = request(`http://127.0.0.1:${port}/console/events`, { headers }, (res) => {
          resolve(res.statusCode ?? 0);
          if (res.statusCode !== 200) res.resume();
        });
        req.on('error', reject);
        req.end();
      });
    return { post, store, events };
  };

  it('refuses an actor without estate:lifecycle for the namespace; nothing is appended', async () => {
    const { post, store } = await serve({ by: 'mallory', scopes: ['estate:lifecycle:accounts', 'estate:publish'] });
    const r = await post({ action: 'retire', reason: 'pwned' });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).error).toMatchObject({ code: 'insufficient_scope' });
    expect(JSON.parse(r.body).error.message).toContain('estate:lifecycle:payments');
    expect(await store.readAll({})).toHaveLength(1);
  });

  it('refuses to approve or reject drift without estate:lifecycle for the tool: the upstream port is never asked', async () => {
    const { post } = await serve({ by: 'mallory', scopes: ['estate:read', 'estate:lifecycle:crm', 'estate:publish'] });
    for (const action of ['approve', 'reject']) {
      const r = await post({ action, reason: 'x', candidateHash: 'ab'.repeat(32) }, '/console/api/upstreams/fx/drift/fx.echo');
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body).error.message).toContain('estate:lifecycle:fx');
    }
    expect(decided).toEqual([]);
  });

  it('lets the namespace scope reach the upstream port', async () => {
    decided.length = 0;
    const { post } = await serve({ by: 'fx-ops', scopes: ['estate:lifecycle:fx'] });
    const r = await post({ action: 'reject', reason: 'x', candidateHash: 'ab'.repeat(32) }, '/console/api/upstreams/fx/drift/fx.echo');
    expect(r.status).toBe(409);
    expect(decided).toEqual(['reject fx.echo']);
  });

  it('bounds the open change streams: one past the cap is 503', async () => {
    const { events } = await serve({ by: 'op', scopes: [] }, 2);
    expect(await events()).toBe(200);
    expect(await events()).toBe(200);
    expect(await events()).toBe(503);
  });

  it("bounds one viewer's change streams by subject within its tenant: alice of one tenant cannot take another's", async () => {
    // The signed-in path: a token's principal (here told by a header) through tokenAccess, as the server admits it.
    const authenticator: Authenticator = {
      resourceMetadataUrl: 'http://127.0.0.1/.well-known/oauth-protected-resource',
      authenticate: (req) => Promise.resolve({ ok: true, caller: { principal: { tenant: String(req.headers['x-tenant']), subject: 'alice', scopes: ['estate:read'], clearance: 'public' }, expiresAt: Math.floor(Date.now() / 1000) + 3600 } }),
    };
    const signIn = { clientId: 'console', scope: 'estate:read', resource: 'http://127.0.0.1/mcp', issuer: {} as SignInSettings['issuer'] };
    const { events } = await serve(tokenAccess(authenticator, signIn), 32);
    const as = (tenant: string) => ({ authorization: 'Bearer x', 'x-tenant': tenant });
    const perViewer = streamsPerViewer(32);
    for (let i = 0; i < perViewer; i++) expect(await events(as('acme'))).toBe(200);
    expect(await events(as('acme'))).toBe(429);
    // Before, keyed by the subject alone: 429 here too.
    expect(await events(as('globex'))).toBe(200);
  });

  it('lets an actor with the namespace scope deprecate, recorded as that actor', async () => {
    const { post, store } = await serve({ by: 'ops-bot', scopes: ['estate:lifecycle:payments'] });
    const r = await post({ action: 'deprecate', reason: 'superseded' });
    expect(r.status, r.body).toBe(200);
    const events = await store.readAll({});
    expect(events).toHaveLength(2);
    expect(events[1]?.data).toMatchObject({ reason: 'superseded', by: 'ops-bot' });
  });
});
