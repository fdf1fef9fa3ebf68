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
});
