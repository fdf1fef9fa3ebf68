/** The publish guard and lifecycle as a decider: given(events).when(command).then(events | refusal). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CatalogueEvent } from '#domain/events';
import { classifyDefinition } from '#domain/classify';
import { canonicalHash } from '#domain/hash';
import { baselineOf, decideLifecycle, decidePublish, evolve, initialToolState, type PublishVerdict, type ToolState } from '#domain/guard';
import { LEVEL_RANK, type ToolDefinition } from '#domain/types';
import { aDefinition } from '../fixtures/builders.ts';

const AT = '2026-02-01T00:00:00.000Z';
const given = (...events: CatalogueEvent[]): ToolState => events.reduce(evolve, initialToolState('payments.lookup'));
const publishCmd = (definition: ToolDefinition) => ({
  type: 'Publish' as const,
  definition,
  definitionHash: canonicalHash(definition),
  schemaHash: canonicalHash(definition.inputSchema),
  by: 'tester',
  at: AT,
});
const whenPublished = (state: ToolState, def: ToolDefinition): PublishVerdict => decidePublish(publishCmd(def), state);
/** Publish through the decider and return the events, failing the test if refused. */
const published = (state: ToolState, def: ToolDefinition): CatalogueEvent[] => {
  const v = whenPublished(state, def);
  expect(v.error?.message, 'expected the publish to be accepted').toBeUndefined();
  return v.events;
};

const v1 = aDefinition();
const state1 = given(...published(initialToolState('payments.lookup'), v1));

const withOptional = aDefinition({
  version: '1.1.0',
  inputSchema: { ...v1.inputSchema, properties: { ...(v1.inputSchema.properties as object), note: { type: 'string' } } },
});
const withRequiredNote = aDefinition({
  version: '2.0.0',
  inputSchema: { ...withOptional.inputSchema, required: ['reference', 'note'] },
});

describe('first publish', () => {
  it('is accepted without a baseline, level initial, one ToolVersionPublished event carrying the hashes', () => {
    const v = whenPublished(initialToolState('payments.lookup'), v1);
    expect(v.result).toBe('published');
    expect(v.level).toBe('initial');
    expect(v.events).toHaveLength(1);
    const e = v.events[0];
    expect(e?.type).toBe('ToolVersionPublished');
    if (e?.type !== 'ToolVersionPublished') return;
    expect(e.data.definitionHash).toBe(canonicalHash(v1));
    expect(e.data.schemaHash).toBe(canonicalHash(v1.inputSchema));
    expect(e.data.by).toBe('tester');
  });
});

describe('immutability (invariant 6)', () => {
  it('a byte-identical re-publish answers unchanged and appends nothing', () => {
    const v = whenPublished(state1, aDefinition());
    expect(v.result).toBe('unchanged');
    expect(v.events).toEqual([]);
  });
  it('other content under an existing version is refused, naming the rule', () => {
    const v = whenPublished(state1, aDefinition({ description: 'changed' }));
    expect(v.result).toBe('refused');
    expect(v.error?.code).toBe('immutable');
    expect(v.error?.message).toMatch(/^immutability: payments\.lookup@1\.0\.0 is already published/);
    expect(v.events).toEqual([]);
  });
});

describe('monotonicity', () => {
  it('a version not greater than the baseline is refused', () => {
    const s = given(...published(state1, withOptional));
    const v = whenPublished(s, aDefinition({ version: '1.0.5', description: 'x' }));
    expect(v.result).toBe('refused');
    expect(v.error?.code).toBe('not-monotonic');
  });
  it('after deprecating 2.0.0 the baseline falls back to the newest active 1.x, so work continues on 1.x', () => {
    let s = given(...published(state1, withOptional));
    s = given(...[...published(initialToolState('payments.lookup'), v1), ...published(state1, withOptional)]);
    const major = published(s, withRequiredNote);
    s = major.reduce(evolve, s);
    s = decideLifecycle({ type: 'Deprecate', name: 'payments.lookup', version: '2.0.0', reason: 'too strict', by: 't', at: AT }, s).reduce(evolve, s);
    expect(baselineOf(s)?.definition.version).toBe('1.1.0');
    const patch = aDefinition({ ...withOptional, version: '1.1.1', description: 'clearer words' });
    expect(whenPublished(s, patch).result).toBe('published');
  });
  it('baseline: newest active, else newest deprecated, else newest retired', () => {
    let s = state1;
    s = decideLifecycle({ type: 'Retire', name: 'payments.lookup', version: '1.0.0', reason: 'r', by: 't', at: AT }, s).reduce(evolve, s);
    expect(baselineOf(s)?.status).toBe('retired');
    s = published(s, aDefinition({ version: '1.0.1', description: 'again' })).reduce(evolve, s);
    s = decideLifecycle({ type: 'Deprecate', name: 'payments.lookup', version: '1.0.1', reason: 'r', by: 't', at: AT }, s).reduce(evolve, s);
    expect(baselineOf(s)?.definition.version).toBe('1.0.1');
    expect(baselineOf(s)?.status).toBe('deprecated');
  });
});

describe('bump enforcement', () => {
  it('a major change published as a minor is refused with the classifier reasons', () => {
    const v = whenPublished(given(...published(initialToolState('payments.lookup'), v1), ...published(state1, withOptional)), { ...withRequiredNote, version: '1.2.0' });
    expect(v.result).toBe('refused');
    expect(v.error?.code).toBe('bump-too-small');
    expect(v.level).toBe('major');
    expect(v.reasons.some((r) => r.level === 'major')).toBe(true);
    expect(v.error?.message).toContain('needs at least 2.0.0');
    expect(v.error?.message).not.toContain('\n');
  });
  it('a minor change needs a higher minor (or the next major); a patch bump is refused', () => {
    expect(whenPublished(state1, { ...withOptional, version: '1.0.1' }).error?.code).toBe('bump-too-small');
    expect(whenPublished(state1, { ...withOptional, version: '1.1.0' }).result).toBe('published');
    expect(whenPublished(state1, { ...withOptional, version: '2.0.0' }).result).toBe('published');
  });
  it('a bigger bump than needed is allowed; skipping a major never is', () => {
    const doc = aDefinition({ version: '2.0.0', description: 'only words changed' });
    expect(whenPublished(state1, doc).result).toBe('published');
    const skip = whenPublished(state1, { ...doc, version: '3.0.0' });
    expect(skip.result).toBe('refused');
    expect(skip.error?.code).toBe('major-skipped');
  });
  it('property: the guard never accepts a version whose bump is smaller than the classifier verdict', () => {
    const versions = fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3 })).map(([a, b, c]) => `${a}.${b}.${c}`);
    const edits = fc.constantFrom<(d: ToolDefinition) => ToolDefinition>(
      (d) => ({ ...d, description: `${d.description}!` }),
      (d) => ({ ...d, inputSchema: { ...d.inputSchema, properties: { ...(d.inputSchema.properties as object), extra: { type: 'string' } } } }),
      (d) => ({ ...d, inputSchema: { ...d.inputSchema, required: ['reference', 'include_legs'] } }),
      (d) => ({ ...d, access: { ...d.access, requiredScopes: ['payments.admin'] } }),
      (d) => ({ ...d, access: { ...d.access, classification: 'public' } }),
      (d) => ({ ...d, sideEffect: 'idempotent' }),
      (d) => d,
    );
    fc.assert(
      fc.property(versions, versions, edits, (baseV, nextV, edit) => {
        const base = aDefinition({ version: baseV });
        const next = { ...edit(base), version: nextV };
        const s = given(...published(initialToolState('payments.lookup'), base));
        const verdict = whenPublished(s, next);
        if (verdict.result !== 'published') return;
        const { level } = classifyDefinition(base, next);
        const [bM, bm] = baseV.split('.').map(Number) as [number, number];
        const [nM, nm] = nextV.split('.').map(Number) as [number, number];
        if (LEVEL_RANK[level] >= LEVEL_RANK.major) expect(nM).toBe(bM + 1);
        if (level === 'minor') expect(nM === bM + 1 || (nM === bM && nm > bm)).toBe(true);
        expect(nM).toBeLessThanOrEqual(bM + 1);
      }),
      { numRuns: 500 },
    );
  });
  it('property: the guard accepts every version whose bump is at least the classifier verdict (and skips no major)', () => {
    const edits = fc.constantFrom<(d: ToolDefinition) => ToolDefinition>(
      (d) => ({ ...d, description: `${d.description}!` }),
      (d) => ({ ...d, inputSchema: { ...d.inputSchema, properties: { ...(d.inputSchema.properties as object), extra: { type: 'string' } } } }),
      (d) => ({ ...d, inputSchema: { ...d.inputSchema, required: ['reference', 'include_legs'] } }),
      (d) => ({ ...d, access: { ...d.access, requiredScopes: ['payments.admin'] } }),
      (d) => ({ ...d, access: { ...d.access, classification: 'public' } }),
      (d) => ({ ...d, sideEffect: 'idempotent' }),
      (d) => ({ ...d, title: 'Another title' }),
    );
    const bumps = fc.constantFrom('patch', 'minor', 'major') as fc.Arbitrary<keyof typeof LEVEL_RANK>;
    const part = fc.integer({ min: 0, max: 5 });
    let accepted = 0;
    fc.assert(
      fc.property(fc.tuple(part, part, part), edits, bumps, fc.tuple(part, part), ([M, m, p], edit, bump, [x, y]) => {
        const base = aDefinition({ version: `${M}.${m}.${p}` });
        const next0 = edit(base);
        const { level } = classifyDefinition(base, next0);
        fc.pre(LEVEL_RANK[bump] >= LEVEL_RANK[level]);
        // The smallest version of that bump, plus any amount within it (never past the next major).
        const version = bump === 'major' ? `${M + 1}.${x}.${y}` : bump === 'minor' ? `${M}.${m + 1 + x}.${y}` : `${M}.${m}.${p + 1 + x}`;
        const s = given(...published(initialToolState('payments.lookup'), base));
        const verdict = whenPublished(s, { ...next0, version });
        expect(verdict.error, `${base.version} → ${version} (${level} change, ${bump} bump)`).toBeUndefined();
        expect(verdict.result).toBe('published');
        expect(verdict.level).toBe(level);
        accepted++;
      }),
      { numRuns: 500 },
    );
    expect(accepted).toBeGreaterThan(100);
  });
});

describe('lifecycle', () => {
  const dep = (s: ToolState, version = '1.0.0') => decideLifecycle({ type: 'Deprecate', name: 'payments.lookup', version, reason: 'use 2.x', by: 't', at: AT }, s);
  const ret = (s: ToolState, version = '1.0.0') => decideLifecycle({ type: 'Retire', name: 'payments.lookup', version, reason: 'gone', by: 't', at: AT }, s);
  it('active → deprecated → retired', () => {
    const e1 = dep(state1);
    expect(e1.map((e) => e.type)).toEqual(['ToolVersionDeprecated']);
    const s2 = e1.reduce(evolve, state1);
    expect(ret(s2).map((e) => e.type)).toEqual(['ToolVersionRetired']);
  });
  it('active → retired directly', () => {
    expect(ret(state1).map((e) => e.type)).toEqual(['ToolVersionRetired']);
  });
  it('deprecating a deprecated version and retiring a retired one decide nothing (unchanged); deprecating a retired one is refused', () => {
    const s2 = dep(state1).reduce(evolve, state1);
    expect(dep(s2)).toEqual([]);
    expect(dep(s2, '1.0.0')).toEqual([]);
    const s3 = ret(s2).reduce(evolve, s2);
    expect(ret(s3)).toEqual([]);
    expect(() => dep(s3)).toThrow(expect.objectContaining({ kind: 'lifecycle', code: 'already-retired', message: expect.stringMatching(/is retired; a retired version cannot be deprecated/) }));
    // Never back: retired stays retired whatever is asked.
    const s4 = ret(state1).reduce(evolve, state1);
    expect(ret(s4)).toEqual([]);
    expect(() => dep(s4)).toThrow(/is retired/);
  });
  it('unknown tool and unknown version are not-found', () => {
    expect(() => dep(initialToolState('payments.lookup'))).toThrow(expect.objectContaining({ kind: 'not-found', code: 'unknown-tool' }));
    expect(() => dep(state1, '9.9.9')).toThrow(expect.objectContaining({ kind: 'not-found', code: 'unknown-version' }));
  });
});
