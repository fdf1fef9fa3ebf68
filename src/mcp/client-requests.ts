/**
 * Requests from the server to the client (2025 stateful sessions): `elicitation/create` and `sampling/createMessage`,
 * sent while a tools/call runs, on that call's own stream, with an id of ours. The client's response comes back as an
 * ordinary inbound message and is settled here by id. A request the client can never answer must not hang the
 * handler: the call's abort signal (timeout, `notifications/cancelled`) and the session's end reject it.
 */
import type { ElicitParams, ElicitResult, HandlerContext, ListRootsResult, SampleParams, SampleResult } from '#handlers/types';
import type { JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId } from './jsonrpc.ts';
import { isPlainObject } from './jsonrpc.ts';

export const ELICIT_METHOD = 'elicitation/create';
export const SAMPLE_METHOD = 'sampling/createMessage';
export const ROOTS_METHOD = 'roots/list';
export type ClientMethod = typeof ELICIT_METHOD | typeof SAMPLE_METHOD | typeof ROOTS_METHOD;

/** The capability a client declares (in initialize, or per request on 2026-07-28) for each method. */
export const CAPABILITY_OF: Readonly<Record<ClientMethod, string>> = { [ELICIT_METHOD]: 'elicitation', [SAMPLE_METHOD]: 'sampling', [ROOTS_METHOD]: 'roots' };

/** `input_required`: a stateless call's question has no answer yet (see input-required.ts); the run ends there. */
export type ClientRequestFailure = 'capability' | 'unavailable' | 'aborted' | 'client_error' | 'invalid_result' | 'closed' | 'undeliverable' | 'input_required';

/** Why a request to the client gave no result. A handler may catch it and return an `isError` result of its own. */
export class ClientRequestError extends Error {
  constructor(
    readonly reason: ClientRequestFailure,
    message: string,
    /** The JSON-RPC error code the client answered with (reason `client_error`). */
    readonly code?: number,
    /** The capability the client did not declare (reason `capability`). */
    readonly capability?: string,
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

const WHAT: Readonly<Record<ClientMethod, string>> = {
  [ELICIT_METHOD]: 'action must be accept, decline or cancel',
  [SAMPLE_METHOD]: 'content and model are required',
  [ROOTS_METHOD]: 'roots must be an array of objects with a uri',
};

/** Whether a client's answer has the shape its method promises (the same check for a response and an input response). */
export const validClientResult = (method: ClientMethod, r: Record<string, unknown>): boolean => {
  switch (method) {
    case ELICIT_METHOD:
      return typeof r.action === 'string' && ELICIT_ACTIONS.includes(r.action) && (r.content === undefined || isPlainObject(r.content));
    case SAMPLE_METHOD:
      return (isPlainObject(r.content) || Array.isArray(r.content)) && typeof r.model === 'string';
    case ROOTS_METHOD:
      return Array.isArray(r.roots) && r.roots.every((x) => isPlainObject(x) && typeof x.uri === 'string');
  }
};

const checked = <T>(method: ClientMethod, result: Record<string, unknown>): T => {
  if (!validClientResult(method, result)) throw new ClientRequestError('invalid_result', `The client answered ${method} with an invalid result: ${WHAT[method]}`);
  return result as T;
};

/**
 * The handler's `elicit`, `sample` and `listRoots` on a 2025 session, bound to one attempt's abort signal. Without
 * `ask` they refuse; stateless 2026-07-28 calls get theirs from input-required.ts instead.
 */
export const clientAskers =
  (ask: ClientAsk | undefined) =>
  (signal: () => AbortSignal, asked?: () => void): Pick<HandlerContext, 'elicit' | 'sample' | 'listRoots'> => {
    const call = async (method: ClientMethod, params: Record<string, unknown>): Promise<Record<string, unknown>> => {
      if (!ask) {
        throw new ClientRequestError('unavailable', `${method} is not available here: this call has no way to ask the client`);
      }
      asked?.();
      return ask(method, params, signal());
    };
    return {
      elicit: async (params: ElicitParams): Promise<ElicitResult> => checked<ElicitResult>(ELICIT_METHOD, await call(ELICIT_METHOD, params)),
      sample: async (params: SampleParams): Promise<SampleResult> => checked<SampleResult>(SAMPLE_METHOD, await call(SAMPLE_METHOD, params)),
      listRoots: async (): Promise<ListRootsResult> => checked<ListRootsResult>(ROOTS_METHOD, await call(ROOTS_METHOD, {})),
    };
  };

/**
 * A session handler's question to its client, asked only of a client that declared the capability (2025-11-25: an
 * empty elicitation capability means form mode only; URL mode must be declared), over the session's channel.
 */
export const askDeclared = (
  requests: ClientRequests | null,
  declaredCapabilities: Record<string, unknown>,
  q: { callId: RequestId; method: ClientMethod; params: Record<string, unknown>; signal: AbortSignal },
): Promise<Record<string, unknown>> => {
  const capability = CAPABILITY_OF[q.method];
  const declared = declaredCapabilities[capability];
  if (!isPlainObject(declared)) {
    return Promise.reject(new ClientRequestError('capability', `${q.method} refused: the client did not declare the ${capability} capability`, undefined, capability));
  }
  if (q.method === ELICIT_METHOD && q.params.mode === 'url' && !isPlainObject(declared.url)) {
    return Promise.reject(new ClientRequestError('capability', `${q.method} refused: the client did not declare URL-mode elicitation`));
  }
  if (!requests) return Promise.reject(new ClientRequestError('unavailable', `${q.method} is not available: this session has no channel to the client`));
  return requests.request(q.method, q.params, q.callId, q.signal);
};
