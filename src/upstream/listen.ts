/**
 * Hearing a 2026-07-28 upstream's tool list change. A stateless upstream has no session to send
 * `notifications/tools/list_changed` on: it tells only a client that opened a `subscriptions/listen` stream asking for
 * `toolsListChanged`. So on such a connection, when the upstream advertises `tools.listChanged`, Estate keeps one
 * listen stream open for as long as the connection lives; its notifications reach the same handler a 2025 session's do
 * (the SDK dispatches them there), and the serving process syncs.
 *
 * The SDK does not re-listen after a stream ends, so this does: after an unexpected end it re-opens with backoff, and
 * once re-opened it asks for a sync, since a change may have fallen in the gap. An upstream that does not advertise
 * `tools.listChanged`, refuses to listen, or speaks 2025 keeps the interval sync (`--upstream-sync-interval`) only.
 */
import type { McpSubscription } from '@modelcontextprotocol/client';
import { describeFailure, STATELESS_REVISION, upstreamAnswered, type UpstreamSession } from './connection.ts';

export interface ListenOptions {
  ns: string;
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
  /** The tool list may have changed: sync. */
  onChanged: () => void;
  /** Whether this session is still the link's live one (false once it closed or was replaced). */
  alive: () => boolean;
  /** Backoff before re-listen n (1-based). */
  delayMs?: (n: number) => number;
}

const defaultDelay = (n: number): number => Math.min(30_000, 500 * 2 ** (n - 1));

/** Whether this session can be listened to at all. */
export const canListen = (session: UpstreamSession): boolean =>
  session.protocolVersion === STATELESS_REVISION && session.client.getServerCapabilities()?.tools?.listChanged === true;

/** Keep one listen stream open on a live session; returns a stopper. Does nothing where `canListen` says no. */
export const keepListening = (session: UpstreamSession, o: ListenOptions): (() => void) => {
  if (!canListen(session)) return () => undefined;
  let stopped = false;
  let sub: McpSubscription | undefined;
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;
  let opened = 0;
  const live = () => !stopped && o.alive();

  const open = async (): Promise<void> => {
    if (!live()) return;
    try {
      const s = await session.client.listen({ toolsListChanged: true }, { timeout: 30_000 });
      if (!live()) return void (await s.close());
      if (s.honoredFilter.toolsListChanged !== true) {
        o.log.warn({ upstream: o.ns }, 'upstream declined to send tool list changes on a listen stream; interval sync only');
        return void (await s.close());
      }
      sub = s;
      failures = 0;
      opened++;
      o.log.info({ upstream: o.ns, reopened: opened > 1 }, 'listening for upstream tool list changes');
      if (opened > 1) o.onChanged();
      const how = await s.closed;
      sub = undefined;
      if (how === 'local' || !live()) return;
      o.log.warn({ upstream: o.ns, how }, 'upstream listen stream ended; listening again');
    } catch (e) {
      if (!live()) return;
      if (upstreamAnswered(e)) {
        // A JSON-RPC error: the upstream will not listen (asking again would be refused again).
        o.log.warn({ upstream: o.ns, error: describeFailure(e) }, 'upstream refused to listen; interval sync only');
        return;
      }
      o.log.warn({ upstream: o.ns, error: describeFailure(e) }, 'upstream listen failed; retrying');
    }
    failures++;
    timer = setTimeout(() => void open(), (o.delayMs ?? defaultDelay)(failures));
    timer.unref();
  };
  void open();
  return () => {
    stopped = true;
    clearTimeout(timer);
    void sub?.close().catch(() => undefined);
  };
};
