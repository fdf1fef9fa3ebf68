/**
 * `subscriptions/listen` (2026-07-28): a long-lived channel for stateless clients. The first message acknowledges
 * what was agreed; every notification carries the listen request's id as its subscription id, so a stdio client can
 * tell its subscriptions apart.
 */
import type { Principal } from '#domain/types';
import type { JsonRpcNotification, JsonRpcRequest } from './jsonrpc.ts';
import { SUBSCRIPTION_ID_META } from './revisions.ts';
import type { ServerCore } from './server-core.ts';

export interface Listen {
  close(): void;
}

export const openListen = (
  core: ServerCore,
  principal: Principal,
  request: JsonRpcRequest,
  toolsListChanged: boolean,
  send: (n: JsonRpcNotification) => void,
): Listen => {
  const meta = { [SUBSCRIPTION_ID_META]: request.id };
  send({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged }, _meta: meta } });
  if (!toolsListChanged) return { close: () => undefined };
  const watcher = core.notifier.watch({
    principal,
    includeDeprecated: false,
    refreshOnNotify: true,
    notify: () => send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: meta } }),
  });
  core.log.info({ protocolVersion: '2026-07-28', subscription: request.id }, 'listen stream opened');
  return { close: () => watcher.close() };
};
