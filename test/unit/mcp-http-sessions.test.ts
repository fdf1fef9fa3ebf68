/**
 * Session bookkeeping for Streamable HTTP: idle sessions expire after 30 minutes (an open GET stream keeps one
 * alive), and a dropped session is gone for good (the transport answers 404 for it).
 */
import { describe, expect, it } from 'vitest';
import { HttpSessions, SESSION_IDLE_MS } from '#mcp/http-sessions';
import { loadSdkTransport } from '#mcp/sdk-transport';
import { aDefinition } from '../fixtures/builders.ts';
import { makeHarness } from '../fixtures/handlers/harness.ts';
import { makePrincipal } from '#domain/access';

describe('HTTP sessions', () => {
  it('expire after 30 idle minutes unless a GET stream is open', async () => {
    const h = await makeHarness([aDefinition()], { 'payments.lookup': () => ({ content: [] }) });
    const sessions = new HttpSessions(h.core, makePrincipal({}));
    // The SDK transport is loaded on first use (src/mcp/sdk-transport.ts); the HTTP front end awaits it before create().
    await loadSdkTransport();
    try {
      const idle = sessions.create();
      const streaming = sessions.create(makePrincipal({}), 'alice');
      streaming.openStreams = 1;
      const t0 = Date.now();
      sessions.expire(t0 + SESSION_IDLE_MS - 1000);
      expect(sessions.size).toBe(2);
      sessions.expire(t0 + SESSION_IDLE_MS + 1000);
      expect(sessions.get(idle.id)).toBeUndefined();
      expect(sessions.get(streaming.id)).toBeUndefined(); // not alice's: as if it did not exist
      expect(sessions.get(streaming.id, 'alice')).toBe(streaming);
      expect(sessions.size).toBe(1);
    } finally {
      sessions.close();
    }
    expect(sessions.size).toBe(0);
  });

  it('count a principal without a subject apart from one whose subject is `anonymous` (ESTATE_MAX_SESSIONS_PER_SUBJECT)', async () => {
    const h = await makeHarness([aDefinition()], { 'payments.lookup': () => ({ content: [] }) });
    const none = makePrincipal({ tenant: 'initech' });
    const named = makePrincipal({ tenant: 'initech', subject: 'anonymous' });
    const sessions = new HttpSessions(h.core, none, SESSION_IDLE_MS, { perSubject: 1, total: 10 });
    await loadSdkTransport();
    try {
      sessions.create(none);
      expect(sessions.admit(none)).toMatchObject({ status: 429 });
      expect(sessions.admit(named)).toBeUndefined();
      const s = sessions.create(named);
      expect(sessions.admit(named)).toMatchObject({ status: 429 });
      // Given back to the one that held it, not to the other.
      sessions.drop(s.id);
      expect(sessions.admit(named)).toBeUndefined();
      expect(sessions.admit(none)).toMatchObject({ status: 429 });
    } finally {
      sessions.close();
    }
  });
});
