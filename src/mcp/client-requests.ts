/**
 * Requests from the server to the client (2025 stateful sessions): `elicitation/create` and `sampling/createMessage`,
 * sent while a tools/call runs, on that call's own stream, with an id of ours. The client's response comes back as an
 * ordinary inbound message and is settled here by id. A request the client can never answer must not hang the
 * handler: the call's abort signal (timeout, `notifications/cancelled`) and the session's end reject it.
 */
import type { ElicitParams, ElicitResult, HandlerContext, SampleParams, SampleResult } from '../handlers/types.ts';
import type { JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId } from './jsonrpc.ts';
import { isPlainObject } from './jsonrpc.ts';

export const ELICIT_METHOD = 'elicitation/create';
export const SAMPLE_METHOD = 'sampling/createMessage';
export type ClientMethod = typeof ELICIT_METHOD | typeof SAMPLE_METHOD;

/** The capability a client declares in initialize for each method. */
export const CAPABILITY_OF: Readonly<Record<ClientMethod, string>> = { [ELICIT_METHOD]: 'elicitation', [SAMPLE_METHOD]: 'sampling' };

export type ClientRequestFailure = 'capability' | 'unavailable' | 'aborted' | 'client_error' | 'invalid_result' | 'closed' | 'undeliverable';

/** Why a request to the client gave no result. A handler may catch it and return an `isError` result of its own. */
export class ClientRequestError extends Error {
  constructor(
    readonly reason: ClientRequestFailure,
    message: string,
    /** The JSON-RPC error code the client answered with (reason `client_error`). */
    readonly code?: number,
  ) {
    super(message);
    this.name = 'ClientRequestError';
  }
}

/** Sends one request to the client, or sends it a cancellation; related to the tools/call it belongs to. */
export type ClientSender = (message: JsonRpcRequest | JsonRpcNotification, relatedRequestId: RequestId) => void | Promise<void>;

/** What a tools/call is given to ask the client something; the session decides whether it may. */
export type ClientAsk = (method: ClientMethod, params: Record<string, unknown>, signal: AbortSignal) => Promise<Record<string, unknown>>;

interface Pending {
  method: ClientMethod;
  resolve(result: Record<string, unknown>): void;
  reject(e: ClientRequestError): void;
}

export class ClientRequests {
  private readonly pending = new Map<RequestId, Pending>();
  private seq = 0;
  private closed = false;

  constructor(private readonly send: ClientSender) {}

  get size(): number {
    return this.pending.size;
  }

  request(method: ClientMethod, params: Record<string, unknown>, relatedRequestId: RequestId, signal: AbortSignal): Promise<Record<string, unknown>> {
    if (this.closed) return Promise.reject(new ClientRequestError('closed', `${method} not sent: the session is closed`));
    if (signal.aborted) return Promise.reject(new ClientRequestError('aborted', `${method} not sent: the tool call was cancelled or timed out`));
    // Our ids live in their own namespace (the client's ids are for its requests): a prefix keeps logs readable.
    const id = `estate-${++this.seq}`;
    return new Promise((resolve, reject) => {
      const settle = () => {
        this.pending.delete(id);
        signal.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        if (!this.pending.has(id)) return;
        settle();
        // Tell the client to stop asking its user or model; the answer, if it still comes, finds nothing to settle.
        void Promise.resolve()
          .then(() => this.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'the tool call was cancelled or timed out' } }, relatedRequestId))
          .catch(() => undefined);
        reject(new ClientRequestError('aborted', `${method} abandoned: the tool call was cancelled or timed out`));
      };
      this.pending.set(id, {
        method,
        resolve: (r) => (settle(), resolve(r)),
        reject: (e) => (settle(), reject(e)),
      });
      signal.addEventListener('abort', onAbort, { once: true });
      Promise.resolve()
        .then(() => this.send({ jsonrpc: '2.0', id, method, params }, relatedRequestId))
        .catch((e: unknown) => this.pending.get(id)?.reject(new ClientRequestError('undeliverable', `${method} could not be sent to the client: ${e instanceof Error ? e.message : String(e)}`)));
    });
  }

  /** Settles the request a client response answers; false when no request of ours waits for that id. */
  settle(response: JsonRpcResponse): boolean {
    const id = response.id;
    if (id === null) return false;
    const p = this.pending.get(id);
    if (!p) return false;
    if ('error' in response) {
      const { code, message } = response.error;
      p.reject(new ClientRequestError('client_error', `The client answered ${p.method} with an error (${code}): ${message}`, code));
    } else if (isPlainObject(response.result)) {
      p.resolve(response.result);
    } else {
      p.reject(new ClientRequestError('invalid_result', `The client answered ${p.method} with a result that is not an object`));
    }
    return true;
  }

  close(): void {
    this.closed = true;
    for (const p of [...this.pending.values()]) p.reject(new ClientRequestError('closed', `${p.method} abandoned: the session closed`));
  }
}

const ELICIT_ACTIONS: readonly string[] = ['accept', 'decline', 'cancel'];

const checked = <T>(method: ClientMethod, result: Record<string, unknown>, ok: boolean, what: string): T => {
  if (!ok) throw new ClientRequestError('invalid_result', `The client answered ${method} with an invalid result: ${what}`);
  return result as T;
};

/**
 * The handler's `elicit` and `sample`, bound to one attempt's abort signal. Without `ask` (a stateless 2026-07-28
 * request: no stream back to the client is held open for a request of ours) both refuse.
 */
export const clientAskers =
  (ask: ClientAsk | undefined) =>
  (signal: AbortSignal): Pick<HandlerContext, 'elicit' | 'sample'> => {
    const call = async (method: ClientMethod, params: Record<string, unknown>): Promise<Record<string, unknown>> => {
      if (!ask) {
        throw new ClientRequestError(
          'unavailable',
          `${method} is not available on a stateless (2026-07-28) request: the server can send requests to the client only on a 2025 session`,
        );
      }
      return ask(method, params, signal);
    };
    return {
      elicit: async (params: ElicitParams): Promise<ElicitResult> => {
        const r = await call(ELICIT_METHOD, params);
        return checked<ElicitResult>(ELICIT_METHOD, r, typeof r.action === 'string' && ELICIT_ACTIONS.includes(r.action) && (r.content === undefined || isPlainObject(r.content)), 'action must be accept, decline or cancel');
      },
      sample: async (params: SampleParams): Promise<SampleResult> => {
        const r = await call(SAMPLE_METHOD, params);
        return checked<SampleResult>(SAMPLE_METHOD, r, (isPlainObject(r.content) || Array.isArray(r.content)) && typeof r.model === 'string', 'content and model are required');
      },
    };
  };
