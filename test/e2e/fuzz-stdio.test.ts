/**
 * 10,000 random messages — valid and malformed JSON-RPC, random methods and params, notifications, batches, huge and
 * deep values, lines that are not JSON — written to ONE `estate serve --stdio` process. It must never die, never answer
 * a notification, and every line it writes to stdout must be valid JSON-RPC: a response whose id is one we sent (or
 * null), or a server notification. Generated with fast-check from a seed printed on failure (ESTATE_FUZZ_SEED replays).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { makeTempStore, runCli, startStdioServer, type StdioServer, type TempStore } from './helpers.ts';
import { lookupV1, PRINCIPAL_FLAGS } from './sdk-fixtures.ts';

const MESSAGES = 10_000;
const SENTINEL_EVERY = 100;
const FIXTURES = fileURLToPath(new URL('./sdk-fixtures.ts', import.meta.url));
const SEED = process.env.ESTATE_FUZZ_SEED ? Number(process.env.ESTATE_FUZZ_SEED) : Date.now() % 2_147_483_647;

/** What we sent, and so what the server may say about it. */
interface Sent {
  line: string;
  /** The id of a request whose id is a valid JSON-RPC id (string or integer); such an id may come back at most once. */
  id?: string | number;
  /**
   * The id of a well-formed request: it must be answered, exactly once. (A batch's members never are: the session is
   * 2025-11-25, which has no batches, so the whole line gets one null-id -32600 and no `b…` id may ever come back.)
   */
  mustAnswer?: (string | number)[];
  /** A well-formed notification: it must never be answered. */
  notification?: boolean;
  /** Any other string or number id the line carried (a malformed line's id may be echoed, e.g. 1.5). */
  echo?: string | number;
}

const METHODS = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'server/discover',
  'logging/setLevel',
  'resources/list',
  'prompts/list',
  'completion/complete',
  'subscriptions/listen',
];
const NOTIFICATIONS = ['notifications/initialized', 'notifications/cancelled', 'notifications/progress', 'notifications/roots/list_changed', 'notifications/message'];

const stateless = fc.record(
  {
    'io.modelcontextprotocol/protocolVersion': fc.constantFrom('2026-07-28', '2025-11-25', 'v999', ''),
    'io.modelcontextprotocol/clientCapabilities': fc.oneof(fc.constant({}), fc.jsonValue()),
    'io.modelcontextprotocol/logLevel': fc.oneof(fc.constantFrom('debug', 'info', 'error', 'bogus'), fc.jsonValue()),
    progressToken: fc.oneof(fc.string(), fc.integer(), fc.jsonValue()),
  },
  { requiredKeys: ['io.modelcontextprotocol/protocolVersion', 'io.modelcontextprotocol/clientCapabilities'] },
);

const toolArgs = fc.oneof(
  fc.record({ reference: fc.oneof(fc.constant('PMT-771'), fc.string()), include_legs: fc.oneof(fc.boolean(), fc.string()) }, { requiredKeys: [] }),
  fc.dictionary(fc.string(), fc.jsonValue()),
  fc.jsonValue(),
);

const params = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  {
    weight: 3,
    arbitrary: fc.record(
      { name: fc.constantFrom('payments.lookup', 'no.such', ''), arguments: toolArgs, _meta: fc.record({ progressToken: fc.oneof(fc.string(), fc.integer(), fc.jsonValue()) }, { requiredKeys: [] }) },
      { requiredKeys: [] },
    ),
  },
  { weight: 2, arbitrary: fc.record({ protocolVersion: fc.constantFrom('2025-11-25', '2025-03-26', '2024-11-05', '1999-01-01'), capabilities: fc.jsonValue(), clientInfo: fc.jsonValue() }, { requiredKeys: [] }) },
  { weight: 2, arbitrary: fc.record({ _meta: stateless, name: fc.constant('payments.lookup'), arguments: toolArgs, cursor: fc.string() }, { requiredKeys: ['_meta'] }) },
  { weight: 2, arbitrary: fc.jsonValue() },
);

const deep = (depth: number): unknown => {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { k: v };
  return v;
};

/**
 * A line whose id is not one we track: what the server may echo of it is its id after a JSON round trip (-0 becomes 0),
 * when that is a string or a number.
 */
const withEcho = (line: string): Sent => {
  const parsed: unknown = JSON.parse(line);
  const echo = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as { id?: unknown }).id : undefined;
  return { line, ...(typeof echo === 'number' || typeof echo === 'string' ? { echo } : {}) };
};

/** Builds one line from a generated shape; `i` makes every request id unique. */
const message = (i: number): fc.Arbitrary<Sent> =>
  fc.oneof(
    // A well-formed request.
    {
      weight: 30,
      arbitrary: fc.tuple(fc.constantFrom(...METHODS), fc.string(), fc.boolean(), params, fc.boolean()).map(([known, random, useKnown, p, stringId]) => {
        const id = stringId ? `r${i}` : i;
        const msg = { jsonrpc: '2.0', id, method: useKnown ? known : random, ...(p === undefined ? {} : { params: p }) };
        // A subscriptions/listen that is accepted stays open until the client cancels it: answered at most once.
        return { line: JSON.stringify(msg), id, ...(msg.method === 'subscriptions/listen' ? {} : { mustAnswer: [id] }) };
      }),
    },
    // A valid call that makes the server talk back unasked: progress for its token, log messages once a level is set.
    {
      weight: 6,
      arbitrary: fc.tuple(fc.boolean(), fc.constantFrom('debug', 'info', 'error')).map(([setLevel, level]) => {
        const msg = setLevel
          ? { jsonrpc: '2.0', id: i, method: 'logging/setLevel', params: { level } }
          : { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'payments.lookup', arguments: { reference: `PMT-${100 + i}` }, _meta: { progressToken: `p${i}` } } };
        return { line: JSON.stringify(msg), id: i, mustAnswer: [i] };
      }),
    },
    // A well-formed notification: never answered.
    {
      weight: 15,
      arbitrary: fc.tuple(fc.constantFrom(...NOTIFICATIONS), fc.string().map((s) => `notifications/${s}`), fc.boolean(), params).map(([known, random, useKnown, p]) => ({
        line: JSON.stringify({ jsonrpc: '2.0', method: useKnown ? known : random, ...(p !== undefined && typeof p === 'object' && p !== null && !Array.isArray(p) ? { params: p } : {}) }),
        notification: true,
      })),
    },
    // Malformed envelopes: wrong version, bad id types, missing method, results sent to the server.
    {
      weight: 15,
      arbitrary: fc
        .record({
          jsonrpc: fc.oneof(fc.constant('2.0'), fc.constant('1.0'), fc.jsonValue()),
          id: fc.oneof(fc.constant(i), fc.double().filter((d) => !Number.isInteger(d)), fc.boolean(), fc.constant(null), fc.object(), fc.array(fc.integer())),
          method: fc.oneof(fc.constantFrom(...METHODS), fc.jsonValue()),
          params: fc.jsonValue(),
          result: fc.jsonValue(),
          error: fc.jsonValue(),
        }, { requiredKeys: [] })
        .map((m) => {
          const line = JSON.stringify(m);
          return m.id === i ? { line, id: i } : withEcho(line);
        }),
    },
    // Any JSON at all (objects, arrays, scalars). fast-check favours keys such as "id" in the objects it makes (seed
    // 1028175463 sent {..., "id": "/lW_IJI", ...}), and a readable id may be echoed in the refusal, as for a malformed
    // envelope.
    { weight: 10, arbitrary: fc.jsonValue().map((v) => withEcho(JSON.stringify(v) ?? 'null')) },
    // Batches of requests and notifications.
    {
      weight: 5,
      arbitrary: fc.array(fc.constantFrom(...METHODS), { minLength: 0, maxLength: 4 }).map((ms) => ({
        line: JSON.stringify(ms.map((method, k) => (k % 2 ? { jsonrpc: '2.0', method: 'notifications/initialized' } : { jsonrpc: '2.0', id: `b${i}-${k}`, method }))),
      })),
    },
    // Lines that are not JSON.
    { weight: 15, arbitrary: fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('{', '{"jsonrpc":"2.0",', '[1,2', 'null null', '\u0000', '{"id":1}}')).map((s) => ({ line: s })) },
    // Huge and deep values (rare: they are big).
    {
      weight: 1,
      arbitrary: fc.constantFrom('big-string', 'over-limit', 'deep-args', 'deep-json').map((kind) => {
        const id = `h${i}`;
        if (kind === 'big-string') return { id, line: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'payments.lookup', arguments: { reference: 'x'.repeat(600_000) } } }) };
        if (kind === 'over-limit') return { id, line: JSON.stringify({ jsonrpc: '2.0', id, method: 'ping', params: { pad: 'y'.repeat(1_200_000) } }) };
        if (kind === 'deep-args') return { id, line: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'payments.lookup', arguments: { reference: deep(200) } } }) };
        return { id, line: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list', params: deep(3000) }) };
      }),
    },
  );

const isId = (v: unknown): boolean => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) || v === null;

/** A problem with one stdout message, or undefined if it is valid JSON-RPC from a server. */
const problem = (m: unknown): string | undefined => {
  if (Array.isArray(m)) {
    if (m.length === 0) return 'empty batch response';
    for (const x of m) {
      const p = problem(x);
      if (p) return `in batch: ${p}`;
    }
    return undefined;
  }
  if (typeof m !== 'object' || m === null) return 'not an object';
  const o = m as Record<string, unknown>;
  if (o.jsonrpc !== '2.0') return 'jsonrpc is not "2.0"';
  if ('method' in o) {
    if ('id' in o) return 'a server-to-client request (none is expected here)';
    return typeof o.method === 'string' && o.method.startsWith('notifications/') ? undefined : 'a notification with a bad method';
  }
  if (!('id' in o) || !isId(o.id)) return 'response without a valid id';
  const hasResult = 'result' in o;
  const hasError = 'error' in o;
  if (hasResult === hasError) return 'response must have exactly one of result and error';
  if (hasResult) return typeof o.result === 'object' && o.result !== null && !Array.isArray(o.result) ? undefined : 'result is not an object';
  const e = o.error as Record<string, unknown> | null;
  if (typeof e !== 'object' || e === null) return 'error is not an object';
  if (!Number.isInteger(e.code)) return 'error.code is not an integer';
  if (typeof e.message !== 'string') return 'error.message is not a string';
  return undefined;
};

describe('fuzz: 10,000 random messages into one estate serve --stdio', () => {
  let store: TempStore;
  let server: StdioServer;

  beforeAll(async () => {
    store = makeTempStore('estate-fuzz-');
    const file = store.file('lookup.json', lookupV1);
    const r = await runCli(['publish', file, '--store', store.store]);
    if (r.code !== 0) throw new Error(r.stderr);
    server = await startStdioServer(['--store', store.store, '--handlers', FIXTURES, ...PRINCIPAL_FLAGS], { env: { ESTATE_LOG_LEVEL: 'info' } });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    store?.cleanup();
  });

  it('never dies, never answers a notification, and writes only valid JSON-RPC', async () => {
    const context = `seed ${SEED} (replay with ESTATE_FUZZ_SEED=${SEED})`;
    const init = await server.initialize('2025-11-25');
    const sent: Sent[] = [];
    for (let i = 0; i < MESSAGES; i++) {
      const [m] = fc.sample(message(i), { numRuns: 1, seed: SEED + i });
      sent.push(m as Sent);
    }
    let sentinels = 0;
    for (let start = 0; start < sent.length; start += SENTINEL_EVERY) {
      const chunk = sent.slice(start, start + SENTINEL_EVERY);
      // One line per message: a raw newline inside a non-JSON line would split it in two.
      server.child.stdin?.write(chunk.map((s) => `${s.line.replace(/[\r\n]/g, ' ')}\n`).join(''));
      const id = `sentinel-${start}`;
      const pong = await server.request('ping', undefined, id).catch((e: unknown) => {
        throw new Error(`no answer to a ping after message ${start + chunk.length} (${context}): ${String(e)}\nexit: ${String(server.child.exitCode)}`);
      });
      expect(pong.result, context).toEqual({});
      sentinels++;
    }
    expect(server.child.exitCode, `the process exited (${context})`).toBeNull();

    // Every well-formed request (batch members included) is answered: wait until each id has come back, then judge.
    const mustAnswer = sent.flatMap((s) => s.mustAnswer ?? []);
    const answered = new Set<unknown>();
    let parsedUpTo = 0;
    const collect = (): void => {
      for (; parsedUpTo < server.lines.seen.length; parsedUpTo++) {
        try {
          const m = JSON.parse(server.lines.seen[parsedUpTo] as string) as unknown;
          for (const r of Array.isArray(m) ? m : [m]) if (typeof r === 'object' && r !== null && 'id' in r) answered.add((r as { id: unknown }).id);
        } catch {
          // judged below
        }
      }
    };
    server.lines.drain();
    const deadline = Date.now() + 30_000;
    let missing: (string | number)[] = [];
    for (;;) {
      collect();
      missing = mustAnswer.filter((id) => !answered.has(id));
      if (missing.length === 0 || Date.now() > deadline) break;
      await server.lines.next(() => true, Math.max(1, deadline - Date.now())).catch(() => undefined);
    }
    const unanswered = missing.slice(0, 10).map((id) => sent.find((s) => s.mustAnswer?.includes(id))?.line.slice(0, 300));
    expect(unanswered, `requests never answered (${context})`).toEqual([]);
    expect(mustAnswer.length, context).toBeGreaterThan(MESSAGES / 4);

    const requestIds = new Set<unknown>([...sent.filter((s) => s.id !== undefined).map((s) => s.id), ...sent.flatMap((s) => s.mustAnswer ?? [])]);
    for (let k = 0; k < sentinels; k++) requestIds.add(`sentinel-${k * SENTINEL_EVERY}`);
    requestIds.add(init.id);
    const echoIds = new Set<unknown>(sent.filter((s) => s.echo !== undefined).map((s) => s.echo));
    const counts = new Map<unknown, number>();
    let nullIds = 0;
    let notifications = 0;
    const bad: string[] = [];
    for (const line of server.lines.seen) {
      let m: unknown;
      try {
        m = JSON.parse(line);
      } catch {
        bad.push(`not JSON: ${line.slice(0, 200)}`);
        continue;
      }
      const p = problem(m);
      if (p) {
        bad.push(`${p}: ${line.slice(0, 200)}`);
        continue;
      }
      for (const r of Array.isArray(m) ? m : [m]) {
        const o = r as Record<string, unknown>;
        if (!('id' in o)) {
          notifications++;
          continue;
        }
        if (o.id === null) nullIds++;
        else if (echoIds.has(o.id) && !requestIds.has(o.id)) continue;
        else if (!requestIds.has(o.id)) bad.push(`a response to an id never sent: ${line.slice(0, 200)}`);
        else counts.set(o.id, (counts.get(o.id) ?? 0) + 1);
      }
    }
    expect(bad.slice(0, 10), context).toEqual([]);
    const twice = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
    expect(twice.slice(0, 10), `ids answered more than once (${context})`).toEqual([]);
    // A notification cannot be answered with its id (it has none): any answer would carry a null id. Null-id answers
    // are owed only to lines whose id is unreadable, so they can never outnumber those lines.
    const unreadable = sent.filter((s) => s.id === undefined && !s.notification).length;
    expect(nullIds, context).toBeLessThanOrEqual(unreadable);
    // Every array line (a batch, or any JSON array) is refused as a whole, once: batches do not exist on 2025-11-25.
    const arrays = sent.filter((s) => {
      try {
        return Array.isArray(JSON.parse(s.line));
      } catch {
        return false;
      }
    }).length;
    const refusals = server.lines.seen.filter((l) => l.includes('batches are only accepted on 2025-03-26 sessions')).length;
    expect(refusals, context).toBe(arrays);
    expect(mustAnswer.every((id) => counts.get(id) === 1), context).toBe(true);
    console.log(`fuzz (${context}): ${sent.length} messages, ${mustAnswer.length} requests all answered once, ${server.lines.seen.length} stdout lines, ${counts.size} ids answered, ${nullIds} null-id errors, ${notifications} server notifications`);
  }, 120_000);

  it('answers nothing to well-formed notifications alone', async () => {
    const before = server.lines.seen.length;
    const notes = fc.sample(message(0).filter((s) => s.notification === true), { numRuns: 200, seed: SEED });
    server.child.stdin?.write(notes.map((s) => `${s.line}\n`).join(''));
    const pong = await server.request('ping', undefined, 'after-notifications');
    expect(pong.result).toEqual({});
    // A notification has no id, so any answer to one carries a null id (later lines with ids answer the first test).
    const answered = server.lines.seen.slice(before).filter((l) => (JSON.parse(l) as Record<string, unknown>).id === null);
    expect(answered).toEqual([]);
  }, 60_000);
});
