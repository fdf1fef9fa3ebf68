/**
 * list_changed goes only to sessions whose view changed compared with what they were last given.
 */
import { describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { toolStream } from '#domain/events';
import { aDefinition, publishedEvent, retiredEvent } from '../fixtures/builders.ts';
import { makeHarness, resultOf } from '../fixtures/handlers/harness.ts';

// Each tool's handler is in its own namespace (the handler-namespace rule): one function bound under every name.
const noop = () => ({ content: [] });
const h0 = Object.fromEntries(['a', 'acme', 'b', 'c'].map((ns) => [`${ns}.h`, noop]));
const acme = makePrincipal({ tenant: 'acme', clearance: 'internal' });
const globex = makePrincipal({ tenant: 'globex', clearance: 'internal' });
const def = (name: string, tenants: string[], version = '1.0.0') => aDefinition({ name, version, handler: `${name.split('.')[0] as string}.h`, access: { tenants, classification: 'internal' } });

describe('change notifications', () => {
  it('tells only the sessions whose view changed, once until they list again', async () => {
    const h = await makeHarness([def('a.tool', [])], h0);
    const a = h.session(acme);
    const g = h.session(globex);
    await a.initialize();
    await g.initialize();
    resultOf(await a.request('tools/list'));
    resultOf(await g.request('tools/list'));
    await h.publish(def('acme.only', ['acme']));
    expect(a.notifications).toEqual([{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }]);
    expect(g.notifications).toEqual([]);
    await h.publish(def('acme.second', ['acme']));
    expect(a.notifications).toHaveLength(1); // not re-told before it lists again
    resultOf(await a.request('tools/list'));
    await h.publish(def('acme.only', ['acme'], '1.0.1'));
    expect(a.notifications).toHaveLength(2);
    expect(g.notifications).toEqual([]);
  });

  it('a change the session was already given is not news; a session that never listed compares with its start', async () => {
    const h = await makeHarness([def('a.tool', [])], h0);
    const s = h.session(acme);
    await s.initialize();
    await h.publish(def('b.tool', []));
    expect(s.notifications).toHaveLength(1);
    const late = h.session(acme);
    await late.initialize();
    resultOf(await late.request('tools/list'));
    await h.deprecate('b.tool', '1.0.0');
    expect(late.notifications).toHaveLength(1);
    const closed = h.session(acme);
    await closed.initialize();
    closed.session.close();
    await h.publish(def('c.tool', []));
    expect(closed.notifications).toEqual([]);
  });

  it('compares tool by tool with what was given: a change undone before the client lists is not news, one kept is', async () => {
    const h = await makeHarness([def('a.tool', [])], h0);
    const s = h.session(acme);
    await s.initialize();
    resultOf(await s.request('tools/list'));
    // Published and retired in one batch: the view ends as the client was given it.
    const t = def('b.tool', []);
    await h.store.append(toolStream('b.tool'), [publishedEvent(t), retiredEvent('b.tool', '1.0.0')], { expectedRevision: 'no_stream' });
    await h.reader.catchUp();
    expect(s.notifications).toEqual([]);
    // Then a tool that stays: told, once, however many changes follow before it lists again.
    await h.publish(def('c.tool', []));
    await h.publish(def('c.tool', [], '1.0.1'));
    await h.retire('a.tool', '1.0.0');
    expect(s.notifications).toHaveLength(1);
    resultOf(await s.request('tools/list'));
    await h.publish(def('b.tool', [], '2.0.0'));
    expect(s.notifications).toHaveLength(2);
  });
});

