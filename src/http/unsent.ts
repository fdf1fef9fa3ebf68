/**
 * The bound on what a long-lived event stream may hold unsent for a client that is not reading: a client that never
 * reads would otherwise make this process keep every byte meant for it (the kernel's socket buffers fill first, then
 * Node's writable buffer grows without limit), each such client its own copy. Past it nothing more is written: the
 * console's change stream drops the connection (its page connects again); a session call's stream waits for the client
 * to read, its messages kept in the session's replay buffer, and drops it after STALL_MS; a 2026-07-28 call's stream
 * drops further notifications.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export const MAX_UNSENT_BYTES = 1024 * 1024;

/**
 * How long a stream that has stopped being read may wait for its client before the connection is dropped: a client
 * that reads nothing for this long is not coming back for what it was sent (and it may reconnect where it can resume).
 */
export const STALL_MS = 30_000;

/** True when the client has left more than MAX_UNSENT_BYTES unread: the caller writes nothing more to it. */
export const overUnsentBound = (res: ServerResponse): boolean => res.writableLength > MAX_UNSENT_BYTES;

/**
 * What of an answer its client has still to take: Node's count, plus what libuv still holds of the write under way (a
 * single large write counts whole in `writableLength` until the last of it is taken; `writeQueueSize` goes down as
 * the kernel takes it).
 */
const untaken = (res: ServerResponse): number => {
  const queued = (res.socket as { _handle?: { writeQueueSize?: unknown } } | null)?._handle?.writeQueueSize;
  return res.writableLength + (typeof queued === 'number' ? queued : 0);
};

/**
 * Whom an answer's untaken bytes are charged to while its client has not taken them (the caller's subject, in the
 * core that bounds them): `hold` charges, and the function it returns gives back.
 */
export interface UntakenAccount {
  hold(bytes: number): () => void;
}

/**
 * Finds the account of the request an answer answers, only when that answer is left untaken (one resolver per endpoint,
 * given where the answer is written: nothing is made per request, the usual answer is taken at once).
 */
export interface UntakenOwners {
  accountOf(req: IncomingMessage): UntakenAccount;
}

/**
 * A whole answer written at once (JSON) that its client does not take: checked every `stallMs` while any of it is
 * unsent, and dropped with its connection when none of it was taken since the last check. A client that reads slowly
 * keeps its answer; one that reads nothing no longer holds it (and what it was made of) for as long as the connection
 * lasts. Meanwhile what it left untaken is charged to the caller's account (`owners`), given back when the answer is
 * taken whole or dropped: a caller that leaves answers unread cannot go on making more of them. An answer handed to
 * the kernel at once (the usual case) costs one property read.
 */
export const dropWhenNotTaken = (res: ServerResponse, stallMs = STALL_MS, owners?: UntakenOwners): void => {
  if (res.writableLength === 0 || res.writableFinished) return;
  let left = untaken(res);
  const release = owners?.accountOf(res.req).hold(left);
  const check = setInterval(() => {
    const now = untaken(res);
    if (now >= left) res.destroy();
    left = now;
  }, stallMs);
  check.unref();
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    clearInterval(check);
    release?.();
  };
  res.once('finish', stop);
  res.once('close', stop);
};
