/**
 * The bound on what a long-lived event stream (the console's change stream, a session call's stream) may hold unsent
 * for a client that is not reading. Past it the connection is dropped, not written to: a client that never reads would
 * otherwise make this process keep every byte meant for it (the kernel's socket buffers fill first, then Node's
 * writable buffer grows without limit), each such client its own copy. What was dropped is not lost where the stream
 * keeps it for a reconnect (a session call's messages stay in the session's replay buffer).
 */
import type { ServerResponse } from 'node:http';

export const MAX_UNSENT_BYTES = 1024 * 1024;

/**
 * How long a stream that has stopped being read may wait for its client before the connection is dropped: a client
 * that reads nothing for this long is not coming back for what it was sent (and it may reconnect where it can resume).
 */
export const STALL_MS = 30_000;

/** True when the client has left more than MAX_UNSENT_BYTES unread: the caller drops the connection instead. */
export const overUnsentBound = (res: ServerResponse): boolean => res.writableLength > MAX_UNSENT_BYTES;
