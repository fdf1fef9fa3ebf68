/**
 * The publishing API end to end, as a CI pipeline would use it: tokens minted by a local issuer, the real
 * `estate serve --http` over a SQLite store, and the CLI beside it (locally on the same store, and with --server).
 * The API answers with the CLI's own JSON; scopes decide who may publish or retire what.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIssuer, type TestIssuer } from '../fixtures/jwks.ts';
import { makeTempStore, runCli, startHttpServer, toolDefinition, type HttpServer, type TempStore } from './helpers.ts';

const AUDIENCE = 'https://estate.test/mcp';
const METADATA_URL = 'https://estate.test/.well-known/oauth-protected-resource/mcp';

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json(): Record<string, unknown>;
}

const post = async (url: string, body: string | object, token?: string, contentType = 'application/json'): Promise<Reply> => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': contentType, ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
};

const lookupV1 = toolDefinition({ name: 'payments.lookup', handler: 'payments.lookup', description: 'Looks a payment up.' });
/** A MAJOR change (a new required property) under a patch version: the guard refuses it. */
const lookupBadBump = toolDefinition({
  name: 'payments.lookup',
  version: '1.0.1',
  handler: 'payments.lookup',
  description: 'Looks a payment up.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' }, account: { type: 'string' } }, required: ['text', 'account'], additionalProperties: false },
});
/** A MINOR change (an optional property) under a minor version: allowed. */
const lookupMinor = toolDefinition({
  name: 'payments.lookup',
  version: '1.1.0',
  handler: 'payments.lookup',
  description: 'Looks a payment up.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' }, note: { type: 'string' } }, required: ['text'], additionalProperties: false },
});

// Each CLI run starts a process (about a second or two through tsx): generous time, never asserted.
describe('the publishing API (/v1) with tokens', { timeout: 120_000 }, () => {
  let tmp: TempStore;
  let idp: TestIssuer;
  let srv: HttpServer;
  let base: string;
  const token = (sub: string, scope: string) => idp.mint({ claims: { sub, scope, tenant: undefined, clearance: undefined } });

  beforeAll(async () => {
    tmp = makeTempStore('estate-api-');
    idp = await startTestIssuer(AUDIENCE);
    srv = await startHttpServer(['--store', tmp.store, '--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', AUDIENCE]);
    base = new URL('/', srv.url).href.replace(/\/$/, '');
  });
  afterAll(async () => {
    await srv?.stop();
    await idp?.close();
    tmp?.cleanup();
  });

  it('no token: 401 with the challenge, nothing published', async () => {
    const r = await post(`${base}/v1/tools`, lookupV1);
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${METADATA_URL}"`);
    expect((await runCli(['show', 'payments.lookup', '--store', tmp.store])).code).toBe(4);
  });

  it('without estate:publish: 403 insufficient_scope naming it, nothing published', async () => {
    const r = await post(`${base}/v1/tools`, lookupV1, await token('agent-1', 'payments.read payments.write'));
    expect(r.status).toBe(403);
    expect(r.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${METADATA_URL}", error="insufficient_scope", scope="estate:publish", error_description="publishing needs the scope estate:publish"`);
    expect((await runCli(['show', 'payments.lookup', '--store', tmp.store])).code).toBe(4);
  });

  it('a team\'s namespace scope does not reach another team\'s tools', async () => {
    const r = await post(`${base}/v1/tools`, lookupV1, await token('ci-cards', 'estate:publish:cards'));
    expect(r.status).toBe(403);
    expect(r.headers.get('www-authenticate')).toContain('error="insufficient_scope", scope="estate:publish:payments"');
    const lookalike = await post(`${base}/v1/tools`, lookupV1, await token('ci-pay', 'estate:publish:pay'));
    expect(lookalike.status).toBe(403);
  });

  it('a pipeline publishes with estate:publish:<namespace>: 201 with the CLI\'s JSON, recorded under the token\'s subject; again: 200 unchanged', async () => {
    const ci = await token('ci-payments', 'estate:publish:payments');
    const r = await post(`${base}/v1/tools`, lookupV1, ci);
    expect(r.status).toBe(201);
    expect(r.json()).toEqual({ result: 'published', name: 'payments.lookup', version: '1.0.0', level: 'initial', reasons: [], position: expect.any(String) as string });
    const shown = await runCli(['show', 'payments.lookup', '--json', '--store', tmp.store]);
    expect(JSON.parse(shown.stdout)).toMatchObject({ version: '1.0.0', publishedBy: 'ci-payments' });
    const again = await post(`${base}/v1/tools`, lookupV1, ci);
    expect(again.status).toBe(200);
    expect(again.json()).toEqual({ result: 'unchanged', name: 'payments.lookup', version: '1.0.0', level: 'patch', reasons: [] });
  });

  it('a guard refusal: 422 with exactly what `estate publish --json` says', async () => {
    const r = await post(`${base}/v1/tools`, lookupBadBump, await token('ci-payments', 'estate:publish'));
    expect(r.status).toBe(422);
    const local = await runCli(['publish', tmp.file('bad-bump.json', lookupBadBump), '--json', '--store', tmp.store]);
    expect(local.code).toBe(3);
    expect(r.json()).toEqual(JSON.parse(local.stdout));
    expect(r.json()).toMatchObject({ result: 'refused', level: 'major', baseline: '1.0.0', error: { code: 'bump-too-small' } });
    expect((r.json().reasons as unknown[]).length).toBeGreaterThan(0);
  });

  it('/v1/check answers like `estate check --json` and changes nothing', async () => {
    const r = await post(`${base}/v1/check`, lookupMinor, await token('ci-payments', 'estate:publish:payments'));
    expect(r.status).toBe(200);
    const local = await runCli(['check', tmp.file('minor.json', lookupMinor), '--json', '--store', tmp.store]);
    expect(local.code).toBe(0);
    expect(r.json()).toEqual(JSON.parse(local.stdout));
    expect(r.json()).toMatchObject({ result: 'would-publish', level: 'minor', baseline: '1.0.0' });
    const refused = await post(`${base}/v1/check`, lookupBadBump, await token('ci-payments', 'estate:publish:payments'));
    expect(refused.status).toBe(422);
    expect((await runCli(['show', 'payments.lookup@1.1.0', '--store', tmp.store])).code).toBe(4);
  });

  it('a body that is not a definition: 400; a definition breaking a rule: 422 with the CLI\'s error code', async () => {
    const ci = await token('ci-payments', 'estate:publish');
    const notJson = await post(`${base}/v1/tools`, '{"name":', ci);
    expect(notJson.status).toBe(400);
    expect(notJson.json()).toMatchObject({ result: 'refused', name: null, error: { code: 'syntax-error' } });
    expect((await post(`${base}/v1/tools`, '[1,2]', ci)).status).toBe(400);
    const badName = toolDefinition({ name: 'Payments.Lookup' });
    const r = await post(`${base}/v1/tools`, badName, ci);
    expect(r.status).toBe(422);
    const file = tmp.file('bad-name.json', badName);
    const local = await runCli(['publish', file, '--json', '--store', tmp.store]);
    const localJson = JSON.parse(local.stdout) as { error: { code: string; message: string } };
    expect(r.json()).toEqual({ ...localJson, error: { code: localJson.error.code, message: localJson.error.message.replace(`${file}: `, '') } });
  });

  it('415 for a content type other than JSON, 413 over 1 MiB', async () => {
    const ci = await token('ci-payments', 'estate:publish');
    expect((await post(`${base}/v1/tools`, JSON.stringify(lookupV1), ci, 'application/yaml')).status).toBe(415);
    const big = JSON.stringify({ ...lookupV1, description: 'x'.repeat(1024 * 1024) });
    expect((await post(`${base}/v1/tools`, big, ci)).status).toBe(413);
  });

  it('deprecate and retire need estate:lifecycle[:<namespace>]; 200, 404 unknown, 422 refused', async () => {
    const url = (name: string, version: string, verb: string) => `${base}/v1/tools/${name}/versions/${version}/${verb}`;
    const publisher = await token('ci-payments', 'estate:publish');
    const noScope = await post(url('payments.lookup', '1.0.0', 'deprecate'), { reason: 'use 2.x' }, publisher);
    expect(noScope.status).toBe(403);
    expect(noScope.headers.get('www-authenticate')).toContain('scope="estate:lifecycle"');
    // Without the scope, an unknown tool is refused the same way: existence is not revealed.
    expect((await post(url('nope.nothing', '9.9.9', 'deprecate'), { reason: 'x' }, publisher)).status).toBe(403);
    const otherTeam = await post(url('payments.lookup', '1.0.0', 'deprecate'), { reason: 'use 2.x' }, await token('ci-cards', 'estate:lifecycle:cards'));
    expect(otherTeam.status).toBe(403);
    expect(otherTeam.headers.get('www-authenticate')).toContain('scope="estate:lifecycle:payments"');

    const ops = await token('ops-payments', 'estate:lifecycle:payments');
    const ok = await post(url('payments.lookup', '1.0.0', 'deprecate'), { reason: 'use 2.x' }, ops);
    expect(ok.status).toBe(200);
    expect(ok.json()).toEqual({ result: 'deprecated', name: 'payments.lookup', version: '1.0.0', position: expect.any(String) as string });
    // Deprecating a deprecated version: 200 `unchanged`, nothing appended — the body the CLI prints locally (exit 0).
    const twice = await post(url('payments.lookup', '1.0.0', 'deprecate'), { reason: 'again' }, ops);
    expect(twice.status).toBe(200);
    expect(twice.json()).toEqual({ result: 'unchanged', name: 'payments.lookup', version: '1.0.0' });
    const localTwice = await runCli(['deprecate', 'payments.lookup@1.0.0', '--reason', 'again', '--json', '--store', tmp.store]);
    expect(localTwice.code).toBe(0);
    expect(twice.json()).toEqual(JSON.parse(localTwice.stdout));
    expect((await post(url('payments.lookup', '7.0.0', 'retire'), { reason: 'x' }, ops)).status).toBe(404);
    expect((await post(url('payments.lookup', '1.0.0', 'retire'), { nope: 1 }, ops)).status).toBe(400);
    const history = JSON.parse((await runCli(['history', 'payments.lookup', '--json', '--store', tmp.store])).stdout) as { versions: { version: string; status: string }[] };
    expect(history.versions).toEqual([expect.objectContaining({ version: '1.0.0', status: 'deprecated', deprecatedReason: 'use 2.x' })]);
  });

  describe('the CLI with --server (token from ESTATE_TOKEN; the store is never opened)', () => {
    // An unreachable PostgreSQL: opening the store would fail the command.
    const NO_STORE = ['--store', 'postgres://127.0.0.1:1/nowhere'];
    const remote = async (args: string[], tokenValue?: string) =>
      runCli([...args, '--server', base, ...NO_STORE], { env: tokenValue === undefined ? { ESTATE_TOKEN: '' } : { ESTATE_TOKEN: tokenValue } });

    it('publish: same JSON and exit codes as the local verb', async () => {
      const ci = await token('ci-payments', 'estate:publish:payments');
      const file = tmp.file('fx-ish.yaml', `name: payments.refund\nversion: 1.0.0\ndescription: Refunds a payment.\ninputSchema: { type: object, properties: { ref: { type: string } }, additionalProperties: false }\naccess: { classification: internal }\nsideEffect: non_idempotent\nhandler: payments.refund\n`);
      const r = await remote(['publish', file, '--json'], ci);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ result: 'published', name: 'payments.refund', version: '1.0.0', level: 'initial' });
      const again = await remote(['publish', file], ci);
      expect(again.code).toBe(0);
      expect(again.stdout.trim()).toBe('unchanged: payments.refund@1.0.0 is already published with this exact content');
      const shown = JSON.parse((await runCli(['show', 'payments.refund', '--json', '--store', tmp.store])).stdout) as { publishedBy: string };
      expect(shown.publishedBy).toBe('ci-payments');

      const bad = tmp.file('bad-bump-2.json', lookupBadBump);
      const refused = await remote(['publish', bad, '--json'], ci);
      const local = await runCli(['publish', bad, '--json', '--store', tmp.store]);
      expect(refused.code).toBe(3);
      expect(JSON.parse(refused.stdout)).toEqual(JSON.parse(local.stdout));
      expect(refused.stderr.trim()).toBe(local.stderr.trim());

      const badName = tmp.file('bad-name-2.json', toolDefinition({ name: 'Payments.Lookup' }));
      const localBad = await runCli(['publish', badName, '--json', '--store', tmp.store]);
      const remoteBad = await remote(['publish', badName, '--json'], ci);
      expect(remoteBad.code).toBe(localBad.code);
      expect(JSON.parse(remoteBad.stdout)).toEqual(JSON.parse(localBad.stdout));

      const scalar = tmp.file('scalar.yaml', 'just a string\n');
      const localScalar = await runCli(['publish', scalar, '--json', '--store', tmp.store]);
      const remoteScalar = await remote(['publish', scalar, '--json'], ci);
      expect(remoteScalar.code).toBe(localScalar.code);
      expect(JSON.parse(remoteScalar.stdout)).toEqual(JSON.parse(localScalar.stdout));
    });

    it('check, deprecate and retire', async () => {
      const file = tmp.file('minor-2.json', lookupMinor);
      const check = await remote(['check', file], await token('ci', 'estate:publish'));
      expect(check.code).toBe(0);
      expect(check.stdout).toMatch(/^would-publish: payments\.lookup@1\.1\.0 \(minor from 1\.0\.0\)\n {2}minor inputSchema\.properties\.note: /);
      expect(check.stdout).toBe((await runCli(['check', file, '--store', tmp.store])).stdout);
      const ops = await token('ops', 'estate:lifecycle');
      const retire = await remote(['retire', 'payments.refund@1.0.0', '--reason', 'replaced', '--json'], ops);
      expect(retire.code).toBe(0);
      expect(JSON.parse(retire.stdout)).toMatchObject({ result: 'retired', name: 'payments.refund', version: '1.0.0' });
      // Retiring a retired version: unchanged, exit 0 — the same through the API as locally.
      const twice = await remote(['retire', 'payments.refund@1.0.0', '--reason', 'replaced'], ops);
      expect(twice.code).toBe(0);
      expect(twice.stdout).toBe('unchanged payments.refund@1.0.0 (already in that state; nothing appended)\n');
      const twiceJson = await remote(['retire', 'payments.refund@1.0.0', '--reason', 'replaced', '--json'], ops);
      expect(JSON.parse(twiceJson.stdout)).toEqual({ result: 'unchanged', name: 'payments.refund', version: '1.0.0' });
      // Deprecating a retired version is still refused (never back).
      const back = await remote(['deprecate', 'payments.refund@1.0.0', '--reason', 'x'], ops);
      expect(back.code).toBe(3);
      expect(back.stderr).toContain('estate: refused: lifecycle: payments.refund@1.0.0 is retired; a retired version cannot be deprecated');
      const unknown = await remote(['deprecate', 'payments.refund@4.0.0', '--reason', 'x'], ops);
      expect(unknown.code).toBe(4);
      expect(unknown.stderr).toContain('estate: not found: unknown version payments.refund@4.0.0');
    });

    it('no token: usage error (2); a token without the scope: refused by the server (1), with the scope it needs', async () => {
      const file = tmp.file('v1-again.json', lookupV1);
      const none = await remote(['publish', file]);
      expect(none.code).toBe(2);
      expect(none.stderr).toContain('--server needs an access token in ESTATE_TOKEN');
      const weak = await remote(['publish', file, '--json'], await token('agent', 'payments.read'));
      expect(weak.code).toBe(1);
      expect(weak.stderr).toContain('the server answered 403: Forbidden: publishing needs the scope estate:publish');
      expect(JSON.parse(weak.stdout)).toEqual({ error: { code: 'insufficient_scope', message: 'the server answered 403: Forbidden: publishing needs the scope estate:publish' } });
    });
  });
});
