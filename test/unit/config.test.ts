/** Configuration (SPEC §5): flag, else environment, else default; a bad value fails at start with a clear message. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_STORE, DEFAULT_TOPIC, loadConfig, loadServeConfig, type ServeFlags } from '#config';

describe('loadConfig', () => {
  it('defaults', () => {
    const c = loadConfig({}, {});
    expect(c).toMatchObject({ store: DEFAULT_STORE, bus: 'local', topic: DEFAULT_TOPIC, pageSize: 500, listTtlMs: 60_000, logLevel: 'info' });
    expect(DEFAULT_STORE).toBe('sqlite:.estate/estate.db');
    expect(DEFAULT_TOPIC).toBe('estate.catalogue.changes');
    expect(c.actor.length).toBeGreaterThan(0);
  });
  it('the environment overrides defaults; a flag overrides the environment', () => {
    const env = { ESTATE_STORE: 'memory:', ESTATE_BUS: 'kafka://a:9092,b:9092', ESTATE_TOPIC: 't', ESTATE_PAGE_SIZE: '50', ESTATE_LIST_TTL_MS: '1000', ESTATE_LOG_LEVEL: 'debug', ESTATE_ACTOR: 'ci' };
    expect(loadConfig({}, env)).toMatchObject({ store: 'memory:', bus: 'kafka://a:9092,b:9092', topic: 't', pageSize: 50, listTtlMs: 1000, logLevel: 'debug', actor: 'ci' });
    expect(loadConfig({ store: 'sqlite:x.db', bus: 'local', by: 'alice' }, env)).toMatchObject({ store: 'sqlite:x.db', bus: 'local', actor: 'alice' });
    expect(loadConfig({}, { ESTATE_STATE_KEY: 'k' }).stateKey).toBe('k');
    expect(loadConfig({}, { ESTATE_STATE_KEY: '' }).stateKey).toBeUndefined();
  });
  it('session and batch limits: defaults, and from the environment', () => {
    expect(loadConfig({}, {})).toMatchObject({ sessionIdleMs: 1_800_000, maxSessionsPerSubject: 100, maxSessions: 10_000, maxCallsPerSubject: 256, maxUntakenBytesPerSubject: 67_108_864, maxListensPerSubject: 100, maxBatchMessages: 100, maxBatchBytes: 262_144 });
    const env = { ESTATE_SESSION_IDLE_MS: '60000', ESTATE_MAX_SESSIONS_PER_SUBJECT: '3', ESTATE_MAX_SESSIONS: '50', ESTATE_MAX_CALLS_PER_SUBJECT: '8', ESTATE_MAX_UNTAKEN_BYTES_PER_SUBJECT: '1048576', ESTATE_MAX_LISTENS_PER_SUBJECT: '4', ESTATE_MAX_BATCH_MESSAGES: '10', ESTATE_MAX_BATCH_BYTES: '4096' };
    expect(loadConfig({}, env)).toMatchObject({ sessionIdleMs: 60_000, maxSessionsPerSubject: 3, maxSessions: 50, maxCallsPerSubject: 8, maxUntakenBytesPerSubject: 1_048_576, maxListensPerSubject: 4, maxBatchMessages: 10, maxBatchBytes: 4096 });
  });
  it('takes the connection bounds from the environment; unset, they are left to the listener (from the open-file limit)', () => {
    expect(loadConfig({}, { ESTATE_MAX_CONNECTIONS: '100', ESTATE_MAX_CONNECTIONS_PER_PEER: '10', ESTATE_MAX_BODY_BUFFER_BYTES: '2097152' })).toMatchObject({
      maxConnections: 100,
      maxConnectionsPerPeer: 10,
      maxBodyBufferBytes: 2 * 1024 * 1024,
    });
    const unset = loadConfig({}, {});
    expect(unset.maxConnections).toBeUndefined();
    expect(unset.maxConnectionsPerPeer).toBeUndefined();
  });
  it('takes the bound on upstream answers held at once from the environment; unset, the pool keeps its default', () => {
    expect(loadConfig({}, { ESTATE_MAX_UPSTREAM_BUFFER_BYTES: String(128 * 1024 * 1024) })).toMatchObject({ maxUpstreamBufferBytes: 128 * 1024 * 1024 });
    expect(loadConfig({}, {}).maxUpstreamBufferBytes).toBeUndefined();
  });
  it.each([
    [{ ESTATE_MAX_SESSIONS_PER_SUBJECT: '0' }, /ESTATE_MAX_SESSIONS_PER_SUBJECT must be positive/],
    [{ ESTATE_MAX_CALLS_PER_SUBJECT: '1.5' }, /ESTATE_MAX_CALLS_PER_SUBJECT must be a whole number/],
    [{ ESTATE_MAX_SESSIONS: 'many' }, /ESTATE_MAX_SESSIONS/],
    [{ ESTATE_MAX_CONNECTIONS: 'lots' }, /ESTATE_MAX_CONNECTIONS must be a number/],
    [{ ESTATE_MAX_CONNECTIONS_PER_PEER: '-3' }, /ESTATE_MAX_CONNECTIONS_PER_PEER must be positive/],
    [{ ESTATE_MAX_BODY_BUFFER_BYTES: '1000' }, /ESTATE_MAX_BODY_BUFFER_BYTES must be at least 1048576/],
    [{ ESTATE_MAX_UPSTREAM_BUFFER_BYTES: '1048576' }, /ESTATE_MAX_UPSTREAM_BUFFER_BYTES must be at least 67108864 \(one whole answer\)/],
    [{ ESTATE_SESSION_IDLE_MS: '-1' }, /ESTATE_SESSION_IDLE_MS must be positive/],
    [{ ESTATE_MAX_BATCH_BYTES: '2000000' }, /ESTATE_MAX_BATCH_BYTES must be at most 1048576/],
    [{ ESTATE_PAGE_SIZE: '0' }, /ESTATE_PAGE_SIZE must be positive/],
    [{ ESTATE_PAGE_SIZE: '501' }, /ESTATE_PAGE_SIZE must be at most 500/],
    [{ ESTATE_PAGE_SIZE: 'ten' }, /ESTATE_PAGE_SIZE/],
    [{ ESTATE_LIST_TTL_MS: '1.5' }, /ESTATE_LIST_TTL_MS must be a whole number/],
    [{ ESTATE_BUS: 'rabbit://x' }, /bus must be `local` or kafka:\/\//],
    [{ ESTATE_LOG_LEVEL: 'loud' }, /logLevel/],
  ])('refuses %j', (env, message) => {
    expect(() => loadConfig({}, env)).toThrow(message);
    try {
      loadConfig({}, env);
    } catch (e) {
      expect((e as { kind: string }).kind).toBe('usage');
    }
  });
});

describe('settings that used to be read where they were used', () => {
  it('ESTATE_RELAY_TTL_MS and ESTATE_SCHEMA_BUDGET_MS: defaults, values, refusals', () => {
    expect(loadConfig({}, {})).toMatchObject({ schemaBudgetMs: 2000 });
    expect(loadConfig({}, {}).relayTtlMs).toBeUndefined();
    expect(loadConfig({}, { ESTATE_RELAY_TTL_MS: '', ESTATE_SCHEMA_BUDGET_MS: '' })).toMatchObject({ schemaBudgetMs: 2000 });
    expect(loadConfig({}, { ESTATE_RELAY_TTL_MS: '2000', ESTATE_SCHEMA_BUDGET_MS: '50' })).toMatchObject({ relayTtlMs: 2000, schemaBudgetMs: 50 });
    for (const bad of ['99', '1.5', 'soon', '-100']) expect(() => loadConfig({}, { ESTATE_RELAY_TTL_MS: bad })).toThrow(/ESTATE_RELAY_TTL_MS must be a whole number of milliseconds >= 100/);
    for (const bad of ['0', '2.5', 'x']) expect(() => loadConfig({}, { ESTATE_SCHEMA_BUDGET_MS: bad })).toThrow(/ESTATE_SCHEMA_BUDGET_MS must be a whole number of milliseconds/);
  });
});

describe('ESTATE_STATE_TTL_MS', () => {
  it('defaults to an hour; takes whole milliseconds from 1 s to 24 h; anything else is a clear configuration error', () => {
    expect(loadConfig({}, {}).stateTtlMs).toBe(3_600_000);
    expect(loadConfig({}, { ESTATE_STATE_TTL_MS: '' }).stateTtlMs).toBe(3_600_000);
    expect(loadConfig({}, { ESTATE_STATE_TTL_MS: '600000' }).stateTtlMs).toBe(600_000);
    for (const bad of ['0', '999', '1.5', 'an hour', '-1', '86400001']) {
      expect(() => loadConfig({}, { ESTATE_STATE_TTL_MS: bad })).toThrow(/^configuration: .*ESTATE_STATE_TTL_MS must be a whole number of milliseconds from 1000 to 86400000$/);
      expect(() => loadConfig({}, { ESTATE_STATE_TTL_MS: bad })).toThrow(expect.objectContaining({ kind: 'usage', code: 'bad-config' }));
    }
  });
});

describe('loadServeConfig', () => {
  const http = { http: true, port: '8080', host: '127.0.0.1' };
  const auth = { authIssuer: 'https://idp.example', authJwksUrl: 'https://idp.example/jwks', authAudience: 'https://estate.example/mcp' };
  const refusal = (flags: ServeFlags, env: NodeJS.ProcessEnv = {}): { code: string; message: string } => {
    try {
      loadServeConfig(flags, env);
    } catch (e) {
      expect((e as { kind: string }).kind).toBe('usage');
      return { code: (e as { code: string }).code, message: (e as Error).message };
    }
    throw new Error('accepted');
  };
  it('defaults: loopback names, 10 minute sync, console on, no authorization', () => {
    const c = loadServeConfig(http, {});
    expect(c).toMatchObject({ transport: 'http', port: 8080, host: '127.0.0.1', allowedHosts: ['localhost', '127.0.0.1', '[::1]'], upstreamSyncIntervalMs: 600_000, console: true, demo: false, metricsPublic: false });
    expect(c.auth).toBeUndefined();
    expect(loadServeConfig({ ...http, port: '0', allowedHosts: ' A.example ,b', upstreamSyncInterval: '1500ms', console: false }, {})).toMatchObject({ port: 0, allowedHosts: ['a.example', 'b'], upstreamSyncIntervalMs: 1500, console: false });
  });
  it('exactly one transport', () => {
    expect(refusal({ port: '1', host: '127.0.0.1' }).code).toBe('serve-transport');
    expect(refusal({ ...http, stdio: true }).code).toBe('serve-transport');
    expect(loadServeConfig({ stdio: true, port: '8080', host: '0.0.0.0' }, {}).transport).toBe('stdio');
  });
  it.each(['65536', '-1', '80.5', 'http', '1e9', '0x1g'])('refuses --port %s', (port) => {
    expect(refusal({ ...http, port })).toEqual({ code: 'serve-port', message: `serve: --port ${port} is not a port number` });
  });
  it.each(['10 minutes', '1d', '', '-5s', '5s; rm -rf /'])('refuses --upstream-sync-interval %j', (interval) => {
    expect(refusal({ ...http, upstreamSyncInterval: interval }).code).toBe('serve-interval');
  });
  it('--upstream-sync-interval: 0 is off; otherwise from 1 s (1ms made 427 syncs in 5 s) to what a Node timer can wait', () => {
    for (const [given, ms] of [['0', 0], ['0ms', 0], ['1s', 1000], ['1000ms', 1000], ['30', 30_000], ['596h', 596 * 3_600_000]] as const) {
      expect(loadServeConfig({ ...http, upstreamSyncInterval: given }, {}).upstreamSyncIntervalMs, given).toBe(ms);
    }
    for (const given of ['1ms', '999ms']) {
      expect(refusal({ ...http, upstreamSyncInterval: given })).toEqual({ code: 'serve-interval', message: `serve: --upstream-sync-interval '${given}' is shorter than the minimum, 1s (0 turns the timed sync off; list_changed still syncs)` });
    }
    // Past 2^31 - 1 ms Node's timers fire after 1 ms instead: a long interval would sync every millisecond.
    for (const given of ['597h', '99999999999999999999h']) expect(refusal({ ...http, upstreamSyncInterval: given }).message).toMatch(/longer than the maximum, 24 days/);
  });
  it('without authorization HTTP binds loopback only; with it, any address, and no principal flags', () => {
    expect(refusal({ ...http, host: '0.0.0.0' }).code).toBe('serve-host');
    expect(loadServeConfig({ ...http, ...auth, host: '0.0.0.0' }, {}).auth?.issuer).toBe('https://idp.example');
    expect(loadServeConfig({ ...http, host: '0.0.0.0' }, { ESTATE_AUTH_ISSUER: auth.authIssuer, ESTATE_AUTH_JWKS_URL: auth.authJwksUrl, ESTATE_AUTH_AUDIENCE: auth.authAudience }).auth).toBeDefined();
    expect(refusal({ ...http, ...auth, tenant: 'acme', subject: 'x' })).toMatchObject({ code: 'auth-principal-flags', message: expect.stringContaining('remove --tenant, --subject') });
  });
  it('a half authorization is refused on stdio too; a whole one is ignored there', () => {
    expect(refusal({ stdio: true, port: '8080', host: '127.0.0.1', authIssuer: auth.authIssuer }).code).toBe('auth-incomplete');
    expect(loadServeConfig({ stdio: true, port: '8080', host: '127.0.0.1', ...auth, tenant: 'acme' }, {}).auth).toBeUndefined();
  });
  it('the console sign-in: a client id needs authorization; the scope defaults, is checked, and comes from the env too', () => {
    expect(loadServeConfig({ ...http, ...auth }, {}).consoleSignIn).toBeUndefined();
    expect(loadServeConfig({ ...http, ...auth, consoleClientId: 'estate-console' }, {}).consoleSignIn).toEqual({ clientId: 'estate-console', scope: 'estate:read estate:lifecycle' });
    expect(loadServeConfig({ ...http, ...auth }, { ESTATE_CONSOLE_CLIENT_ID: 'c1', ESTATE_CONSOLE_SCOPE: 'estate:read' }).consoleSignIn).toEqual({ clientId: 'c1', scope: 'estate:read' });
    expect(refusal({ ...http, consoleClientId: 'estate-console' }).code).toBe('console-client-without-auth');
    expect(refusal({ ...http, ...auth, consoleClientId: 'has space' }).message).toContain('--console-client-id must be');
    for (const scope of ['a  b', 'a"b', 'x'.repeat(1001), Array.from({ length: 21 }, (_, i) => `s${i}`).join(' ')]) {
      expect(refusal({ ...http, ...auth, consoleClientId: 'c', consoleScope: scope }).message, scope.slice(0, 20)).toContain('--console-scope must');
    }
    // Without the console there is nothing to sign in to: the setting is not read.
    expect(loadServeConfig({ ...http, consoleClientId: 'c', console: false }, {}).consoleSignIn).toBeUndefined();
  });
  it('hands the environment on for upstream secrets, and nothing else reads it', () => {
    const env = { UPSTREAM_TOKEN: 's3cret' };
    expect(loadServeConfig(http, env).secretsEnv).toBe(env);
  });
});
