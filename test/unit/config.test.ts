/** Configuration (SPEC §5): flag, else environment, else default; a bad value fails at start with a clear message. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_STORE, DEFAULT_TOPIC, loadConfig } from '../../src/config.ts';

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
    expect(loadConfig({}, {})).toMatchObject({ sessionIdleMs: 1_800_000, maxSessionsPerSubject: 100, maxSessions: 10_000, maxBatchMessages: 100, maxBatchBytes: 262_144 });
    const env = { ESTATE_SESSION_IDLE_MS: '60000', ESTATE_MAX_SESSIONS_PER_SUBJECT: '3', ESTATE_MAX_SESSIONS: '50', ESTATE_MAX_BATCH_MESSAGES: '10', ESTATE_MAX_BATCH_BYTES: '4096' };
    expect(loadConfig({}, env)).toMatchObject({ sessionIdleMs: 60_000, maxSessionsPerSubject: 3, maxSessions: 50, maxBatchMessages: 10, maxBatchBytes: 4096 });
  });
  it.each([
    [{ ESTATE_MAX_SESSIONS_PER_SUBJECT: '0' }, /ESTATE_MAX_SESSIONS_PER_SUBJECT must be positive/],
    [{ ESTATE_MAX_SESSIONS: 'many' }, /ESTATE_MAX_SESSIONS/],
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
