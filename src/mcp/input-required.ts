/**
 * InputRequiredResult (SEP-2322) for stateless 2026-07-28 tools/call. That revision has no server-to-client requests:
 * a tool that needs the client's user, model or roots answers `resultType: "input_required"` with the questions and
 * an opaque `requestState`, and the client calls again with `inputResponses` and that state.
 *
 * Handlers keep the one API they have on 2025 sessions (`ctx.elicit`, `ctx.sample`, `ctx.listRoots`). On a stateless
 * call nothing is sent: an ask whose answer is known (from the verified state or this request's `inputResponses`)
 * resolves with it; one whose answer is not known is collected and rejects with `InputRequiredSignal`, which ends the
 * run. Asks made before the handler awaits (`Promise.all([...])`) are collected together, so one round can carry
 * several questions. The follow-up call re-runs the handler from the start, so a handler must be deterministic up to
 * each question (docs/decisions.md).
 *
 * The state carries the answers used so far, bound to the call (tool name, version, arguments hash) and to its caller
 * (a keyed hash of tenant and subject), stamped with the time the call's FIRST state was issued (each round's state
 * carries it on), and signed with HMAC-SHA256; it is not encrypted (the client wrote those answers). A state is refused
 * once that time is older than its TTL (ESTATE_STATE_TTL_MS), so no answer it carries outlives the TTL however many
 * rounds the call takes, and when another caller sends it: an answer one principal's user gave (an approval) must not
 * be replayed by another, nor forever. The key is ESTATE_STATE_KEY when set (replicas behind one endpoint must share
 * it), else random per process (a restart then voids states in flight: the client gets -32602 and starts the call
 * again).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '#domain/hash';
import type { Principal } from '#domain/types';
import type { AskOptions, ElicitParams, ElicitResult, HandlerContext, ListRootsResult, SampleParams, SampleResult } from '#handlers/types';
import { CAPABILITY_OF, ClientRequestError, ELICIT_METHOD, ROOTS_METHOD, SAMPLE_METHOD, validClientResult, type ClientMethod } from './client-requests.ts';
import { invalidParams } from './error-map.ts';
import { isPlainObject } from './jsonrpc.ts';

export const INPUT_REQUIRED = 'input_required';

export interface InputRequest {
  method: ClientMethod;
  params: Record<string, unknown>;
}

export interface InputRequiredResult {
  resultType: typeof INPUT_REQUIRED;
  inputRequests: Record<string, InputRequest>;
  requestState: string;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

export const isInputRequiredResult = (r: unknown): r is InputRequiredResult => isPlainObject(r) && r.resultType === INPUT_REQUIRED;

/** Internal: ends a handler run whose question has no answer yet. A handler that catches it changes nothing. */
export class InputRequiredSignal extends ClientRequestError {
  constructor(method: ClientMethod, key: string) {
    super('input_required', `${method} (${key}) needs an answer from the client: the call returns an InputRequiredResult`);
    this.name = 'InputRequiredSignal';
  }
}

/** What a requestState is bound to: replaying it for another tool, version or arguments is refused. */
export interface CallIdentity {
  tool: string;
  version: string;
  argsHash: string;
}

/**
 * 2: the caller and the issue time were added. 3: the issue time (`issuedAt`, each round's own) became the first
 * round's (`firstIssuedAt`): a version 2 state carries answers older than its stamp. A state of an earlier version is
 * refused as failing the integrity check (the client starts the call again).
 */
const STATE_VERSION = 3;

/**
 * How far ahead of this server's clock a state's issue time may be. Replicas behind one endpoint share the key, so a
 * state stamped in the future is not a forgery (whoever could forge one could stamp it with any time at all) but a
 * replica whose clock runs ahead of this one's: within this skew it counts as issued now; further ahead it is refused
 * (the client starts the call again), because taken as it is it would live the TTL plus however far that clock ran
 * ahead. A minute covers clocks kept by NTP with room to spare, and gives a state at most that much beyond the TTL.
 */
export const MAX_STATE_CLOCK_SKEW_MS = 60_000;

/** Who a state is sealed for and when; the key is the per-process default when absent. */
export interface StateIssue {
  principal: Principal;
  /** Milliseconds since the epoch, from the pipeline's clock. */
  now: number;
  /**
   * When the call's first state was issued: `firstIssuedAt` of the state this round was sent (openState). Absent on a
   * round that was sent no state: `now`.
   */
  firstIssuedAt?: number;
  key?: Buffer;
}

/** What a state is checked against: its caller, the time now, and how long a state is good for. */
export interface StateCheck extends StateIssue {
  ttlMs: number;
}

/** The HMAC key: the configured one (ESTATE_STATE_KEY, read by src/config.ts) or 32 fresh random bytes. */
export const resolveStateKey = (configured?: string): Buffer =>
  configured !== undefined && configured.length > 0 ? Buffer.from(configured, 'utf8') : randomBytes(32);

let processKey: Buffer | undefined;
/** For a caller that configured no key: one random key for the life of the process. */
const defaultKey = (): Buffer => (processKey ??= resolveStateKey());

const mac = (key: Buffer, payload: string): string => createHmac('sha256', key).update(payload).digest('base64url');

/**
 * The caller as the state names it: an HMAC, under the state key, of the canonical JSON of `[tenant, subject]` (no
 * subject: null, which no token's `sub` can equal). Keyed, not a plain hash: the state is readable by whoever holds it
 * (the client, a proxy's log), and a subject is often an e-mail address or a name that a plain hash would let anyone
 * confirm by guessing. The JSON array cannot be read as a state payload (base64url), so the one key serves both.
 */
const callerTag = (key: Buffer, principal: Principal): string => mac(key, canonicalJson(['caller', principal.tenant, principal.subject ?? null]));

export const sealState = (identity: CallIdentity, answers: Record<string, unknown>, issue: StateIssue): string => {
  const key = issue.key ?? defaultKey();
  const body = { v: STATE_VERSION, ...identity, caller: callerTag(key, issue.principal), firstIssuedAt: issue.firstIssuedAt ?? issue.now, answers };
  const payload = Buffer.from(canonicalJson(body), 'utf8').toString('base64url');
  return `${payload}.${mac(key, payload)}`;
};

const badState = (why: string) => invalidParams(`Invalid params: requestState ${why}`);

/** What a verified requestState gives the round it was sent with. */
export interface OpenedState {
  answers: Record<string, unknown>;
  /** When the call's first state was issued: the next round's state carries it on (StateIssue). */
  firstIssuedAt: number;
}

/**
 * The answers a requestState carries and the call's first issue time, once its signature, its call identity, its
 * caller and its age check out; -32602 otherwise. A state issued in the future (a replica whose clock runs ahead)
 * counts as issued now, up to MAX_STATE_CLOCK_SKEW_MS ahead; further ahead it is refused.
 */
export const openState = (state: string, identity: CallIdentity, check: StateCheck): OpenedState => {
  const key = check.key ?? defaultKey();
  const dot = state.indexOf('.');
  const payload = dot > 0 ? state.slice(0, dot) : '';
  const given = Buffer.from(dot > 0 ? state.slice(dot + 1) : '', 'utf8');
  const expected = Buffer.from(mac(key, payload), 'utf8');
  if (payload === '' || given.length !== expected.length || !timingSafeEqual(given, expected)) throw badState('failed its integrity check');
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw badState('failed its integrity check');
  }
  if (!isPlainObject(body) || body.v !== STATE_VERSION || !isPlainObject(body.answers) || typeof body.caller !== 'string' || !Number.isSafeInteger(body.firstIssuedAt)) {
    throw badState('failed its integrity check');
  }
  if (body.tool !== identity.tool || body.version !== identity.version || body.argsHash !== identity.argsHash) {
    throw badState('belongs to another call (tool, version or arguments differ)');
  }
  // Not a secret compared (the caller holds the state, and learns nothing of the key from its own tag): plain equality.
  if (body.caller !== callerTag(key, check.principal)) throw badState('belongs to another caller');
  const stamped = body.firstIssuedAt as number;
  if (stamped - check.now > MAX_STATE_CLOCK_SKEW_MS) {
    throw badState(`was issued in the future (more than ${MAX_STATE_CLOCK_SKEW_MS / 1000} s ahead of this server's clock); call the tool again without it`);
  }
  if (check.now - stamped > check.ttlMs) throw badState('has expired; call the tool again without it');
  // Carried on as this clock reads it: a state a little ahead gains no life from the lead.
  return { answers: body.answers, firstIssuedAt: Math.min(stamped, check.now) };
};

/** `inputResponses` as the request carries it: absent, or an object of objects; anything else is -32602. */
export const parseInputResponses = (raw: unknown): Record<string, Record<string, unknown>> => {
  if (raw === undefined) return {};
  if (!isPlainObject(raw)) throw invalidParams('Invalid params: inputResponses must be an object');
  for (const [k, v] of Object.entries(raw)) if (!isPlainObject(v)) throw invalidParams(`Invalid params: inputResponses.${k} must be an object`);
  return raw as Record<string, Record<string, unknown>>;
};

const SHORT: Readonly<Record<ClientMethod, string>> = { [ELICIT_METHOD]: 'elicit', [SAMPLE_METHOD]: 'sample', [ROOTS_METHOD]: 'roots' };

/** One run of a handler on a stateless call: answers known so far, questions still open. */
export class InputRound {
  /** Questions asked in this run that have no answer yet, by key, in the order asked. */
  readonly pending = new Map<string, InputRequest>();
  /** Answers this run consumed: what the next requestState carries. */
  private readonly used: Record<string, unknown> = {};
  private asked = 0;

  /**
   * `firstIssuedAt`: that of the state this round was sent (OpenedState), carried into the next round's state; absent
   * when it was sent none (the next state is the call's first).
   */
  constructor(
    private readonly answers: Readonly<Record<string, unknown>>,
    private readonly capabilities: Readonly<Record<string, unknown>>,
    private readonly firstIssuedAt?: number,
  ) {}

  private async ask(method: ClientMethod, params: Record<string, unknown>, options: AskOptions | undefined): Promise<Record<string, unknown>> {
    const key = options?.key ?? `${SHORT[method]}-${++this.asked}`;
    const capability = CAPABILITY_OF[method];
    if (!isPlainObject(this.capabilities[capability])) {
      throw new ClientRequestError('capability', `${method} refused: the client did not declare the ${capability} capability`, undefined, capability);
    }
    const answer = this.answers[key];
    if (isPlainObject(answer)) {
      // An answer that does not fit the question is asked again rather than handed to the handler.
      if (validClientResult(method, answer)) {
        this.used[key] = answer;
        return answer;
      }
    }
    if (!this.pending.has(key)) this.pending.set(key, { method, params });
    throw new InputRequiredSignal(method, key);
  }

  askers(): Pick<HandlerContext, 'elicit' | 'sample' | 'listRoots'> {
    return {
      elicit: async (params: ElicitParams, options?: AskOptions) => (await this.ask(ELICIT_METHOD, params, options)) as ElicitResult,
      sample: async (params: SampleParams, options?: AskOptions) => (await this.ask(SAMPLE_METHOD, params, options)) as SampleResult,
      listRoots: async (options?: AskOptions) => (await this.ask(ROOTS_METHOD, {}, options)) as ListRootsResult,
    };
  }

  result(identity: CallIdentity, issue: StateIssue): InputRequiredResult {
    return {
      resultType: INPUT_REQUIRED,
      inputRequests: Object.fromEntries(this.pending),
      requestState: sealState(identity, this.used, this.firstIssuedAt === undefined ? issue : { ...issue, firstIssuedAt: this.firstIssuedAt }),
    };
  }
}
