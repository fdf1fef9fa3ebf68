/**
 * What a session refuses before dispatching a frame: a batch where the revision has none (only 2025-03-26 has them),
 * a batch over its bound (docs/security.md: ESTATE_MAX_BATCH_MESSAGES, ESTATE_MAX_BATCH_BYTES; one POST must not become
 * thousands of calls, so the whole batch is refused and nothing in it runs), and a request id already in flight.
 */
import { BATCH_LIMIT_DEFAULTS } from '#config';
import { batchRefused } from './error-map.ts';
import { failure, INVALID_REQUEST, type JsonRpcResponse, type RequestId } from './jsonrpc.ts';
import { allowsBatches } from './revisions.ts';

export interface BatchLimits {
  messages: number;
  bytes: number;
}
export const DEFAULT_BATCH_LIMITS: BatchLimits = { messages: BATCH_LIMIT_DEFAULTS.maxBatchMessages, bytes: BATCH_LIMIT_DEFAULTS.maxBatchBytes };

/** The refusal of a batch frame on a session of `revision`, or null; `bytes`: the frame's size as received. */
export const batchRefusal = (batch: readonly unknown[], revision: string | undefined, limits: BatchLimits = DEFAULT_BATCH_LIMITS, bytes?: number): JsonRpcResponse | null => {
  if (!allowsBatches(revision)) return failure(null, INVALID_REQUEST, batchRefused().message);
  // JSON-RPC 2.0: an empty array is an invalid request (one error, id null), even where batches are accepted.
  if (batch.length === 0) return failure(null, INVALID_REQUEST, 'Invalid Request: an empty batch (a batch holds at least one message)');
  if (batch.length > limits.messages) {
    return failure(null, INVALID_REQUEST, `Invalid Request: a batch may hold at most ${limits.messages} messages (got ${batch.length}; ESTATE_MAX_BATCH_MESSAGES)`);
  }
  if (bytes !== undefined && bytes > limits.bytes) {
    return failure(null, INVALID_REQUEST, `Invalid Request: a batch may be at most ${limits.bytes} bytes (got ${bytes}; ESTATE_MAX_BATCH_BYTES)`);
  }
  return null;
};

/** A request whose id is still in flight on the session: refused, so the first keeps its id (and its cancellation). */
export const duplicateId = (id: RequestId): JsonRpcResponse =>
  failure(id, INVALID_REQUEST, `Invalid Request: request id ${JSON.stringify(id).slice(0, 80)} is already in flight on this session`);
