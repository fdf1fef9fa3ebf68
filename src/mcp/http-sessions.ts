/**
 * Stateful HTTP sessions (2025 revisions): one StatefulSession bound to one SDK Streamable HTTP transport, which owns
 * initialize, the GET event stream (Last-Event-ID replay, 15 s keep-alive comments) and DELETE; Estate answers the
 * session's requests itself (session-json.ts, and session-stream.ts for a call that may send messages before its
 * answer), all of them sharing the session's replay buffer. A session lives on the replica that made it; an id we do
 * not hold is answered 404 so the client starts a new one.
 */
import { randomUUID } from 'node:crypto';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { SESSION_LIMIT_DEFAULTS } from '#config';
import type { Principal } from '#domain/types';
import { isRequest, isResponseEnvelope, type JsonRpcCall, type JsonRpcNotification, type RequestId } from './jsonrpc.ts';
import { createSdkTransport, type SdkTransport } from './sdk-transport.ts';
import { STATEFUL_REVISIONS, STATELESS_REVISION } from './revisions.ts';
import type { ServerCore } from './server-core.ts';
import { CallStream } from './session-stream.ts';
import { createReplayStore, type ReplayStore } from './sse-replay-store.ts';
import type { BatchLimits } from './batch-limits.ts';
import { StatefulSession } from './stateful-session.ts';
import { SubjectCounts, boundKey, subjectOf } from './subject-counts.ts';

export const SESSION_IDLE_MS = SESSION_LIMIT_DEFAULTS.sessionIdleMs;
export const KEEP_ALIVE_MS = 15_000;
/** The revisions a session transport speaks (a session POST's MCP-Protocol-Version header must be one). */
export const SESSION_TRANSPORT_REVISIONS: readonly string[] = [...STATEFUL_REVISIONS, STATELESS_REVISION];

/** How many sessions may be open at once (docs/security.md); ESTATE_MAX_SESSIONS_PER_SUBJECT / ESTATE_MAX_SESSIONS. */
export interface SessionCaps {
  perSubject: number;
  total: number;
}
export const DEFAULT_SESSION_CAPS: SessionCaps = { perSubject: SESSION_LIMIT_DEFAULTS.maxSessionsPerSubject, total: SESSION_LIMIT_DEFAULTS.maxSessions };

/** Why a new session is refused: 429 for one subject over its cap (its own doing), 503 for the server full. */
export interface SessionRefusal {
  status: 429 | 503;
  message: string;
}

export interface HttpSession {
  id: string;
  session: StatefulSession;
  transport: SdkTransport;
  lastSeen: number;
  openStreams: number;
  /** Who opened it, when the edge authenticates callers; a request from anyone else does not find it. */
  owner?: string;
  /** The subject its cap is counted against. */
  subject: string;
  /** What its streams sent, for Last-Event-ID (the SDK transport's and Estate's own alike). */
  replay: ReplayStore;
  /** Calls answered on Estate's own event streams (session-stream.ts), by request id, while they run. */
  calls: Map<RequestId, CallStream>;
}

export class HttpSessions {
  private readonly sessions = new Map<string, HttpSession>();
  private readonly perSubject = new SubjectCounts();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly core: ServerCore,
    private readonly principal: Principal,
    private readonly idleMs = SESSION_IDLE_MS,
    private readonly caps: SessionCaps = DEFAULT_SESSION_CAPS,
    private readonly batchLimits?: BatchLimits,
  ) {
    this.sweeper = setInterval(() => this.expire(), Math.min(60_000, idleMs)).unref();
  }

  get size(): number {
    return this.sessions.size;
  }

  /** Whether `principal` may open one more session; a refusal says which cap, and how to get under it. */
  admit(principal: Principal = this.principal): SessionRefusal | undefined {
    const subject = subjectOf(principal);
    const held = this.perSubject.of(boundKey(principal));
    if (held >= this.caps.perSubject) {
      return {
        status: 429,
        message: `Too Many Requests: subject '${subject.slice(0, 80)}' already has ${held} open sessions (at most ${this.caps.perSubject}, ESTATE_MAX_SESSIONS_PER_SUBJECT); end one with DELETE or let it expire`,
      };
    }
    if (this.sessions.size >= this.caps.total) {
      return { status: 503, message: `Service Unavailable: the server holds its maximum of ${this.caps.total} sessions (ESTATE_MAX_SESSIONS); try again later` };
    }
    return undefined;
  }

  get(id: string, owner?: string): HttpSession | undefined {
    const s = this.sessions.get(id);
    if (s && s.owner !== owner) return undefined;
    if (s) s.lastSeen = Date.now();
    return s;
  }

  /**
   * A new session for an initialize request; registered once the SDK has assigned it the id. The SDK transport must be
   * loaded (`loadSdkTransport`) before.
   */
  create(principal: Principal = this.principal, owner?: string): HttpSession {
    const id = randomUUID();
    const replay = createReplayStore();
    const calls = new Map<RequestId, CallStream>();
    const transport = createSdkTransport({
      sessionIdGenerator: () => id,
      // SSE responses: a tools/call can carry progress and log notifications before its result.
      enableJsonResponse: false,
      eventStore: replay,
      keepAliveMs: KEEP_ALIVE_MS,
      supportedProtocolVersions: [...SESSION_TRANSPORT_REVISIONS],
      onsessionclosed: () => this.drop(id),
    });
    const session = new StatefulSession(this.core, {
      id,
      principal,
      transport: 'http',
      notify: (n: JsonRpcNotification) => {
        // On the GET stream (stored for replay); dropped by the SDK if no stream is open.
        void transport.send(n as JSONRPCMessage).catch((e: unknown) => this.core.log.debug({ err: e, session: id }, 'notification not delivered'));
      },
      notifyRequest: (n: JsonRpcNotification, requestId) => {
        // On the request's own SSE response: Estate's (session-stream.ts), or the SDK transport's.
        const own = calls.get(requestId);
        if (own) return own.send(n);
        void transport.send(n as JSONRPCMessage, { relatedRequestId: requestId }).catch((e: unknown) => this.core.log.debug({ err: e, session: id }, 'notification not delivered'));
      },
      // Elicitation/sampling requests on the tools/call's SSE response; a failure to send rejects the handler's wait.
      sendToClient: (m, requestId) => {
        const own = calls.get(requestId);
        if (own) return own.send(m);
        return transport.send(m as JSONRPCMessage, { relatedRequestId: requestId });
      },
      ...(this.batchLimits ? { batchLimits: this.batchLimits } : {}),
    });
    const subject = boundKey(principal);
    const entry: HttpSession = { id, session, transport, lastSeen: Date.now(), openStreams: 0, subject, replay, calls, ...(owner !== undefined ? { owner } : {}) };
    this.perSubject.take(subject);
    transport.onmessage = (message) => {
      if (isResponseEnvelope(message)) {
        session.acceptResponse(message);
        return;
      }
      const call = message as unknown as JsonRpcCall;
      void session.handle(call).then(
        (answer) => {
          if (answer) return transport.send(answer as JSONRPCMessage, isRequest(call) ? { relatedRequestId: call.id } : undefined);
        },
        (e: unknown) => this.core.log.error({ err: e, session: id }, 'session message failed'),
      ).catch((e: unknown) => this.core.log.debug({ err: e, session: id }, 'answer not delivered'));
    };
    transport.onerror = (e) => this.core.log.debug({ err: e, session: id }, 'transport error');
    this.sessions.set(id, entry);
    return entry;
  }

  drop(id: string): void {
    const s = this.sessions.get(id);
    if (!s) return;
    this.sessions.delete(id);
    this.perSubject.give(s.subject);
    s.session.close();
    for (const call of [...s.calls.values()]) call.close();
    void s.transport.close().catch(() => undefined);
    this.core.log.info({ session: id }, 'session closed');
  }

  /** Close every session idle for longer than the limit; one with an open GET stream is not idle. */
  expire(now: number = Date.now()): void {
    const cutoff = now - this.idleMs;
    for (const s of [...this.sessions.values()]) if (s.openStreams === 0 && s.lastSeen < cutoff) this.drop(s.id);
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const id of [...this.sessions.keys()]) this.drop(id);
  }
}
