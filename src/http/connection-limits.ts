/**
 * Bounds on the HTTP listener's open connections (docs/security.md). A connection holds a file descriptor for as long
 * as its peer keeps it (an idle keep-alive up to 65 s, a request whose headers never finish up to 66 s). Unbounded,
 * one client that opens connections until the process has no descriptors left stops it from accepting anyone else,
 * and from opening anything else: a snapshot file, a PostgreSQL or Kafka connection, an upstream.
 *
 * Past the total, or past the bound for one remote address (so that one address cannot take them all; an IPv6 one
 * counted by its /64: peerKey), a new
 * connection is answered at once with a 503 naming the bound and closed: a client learns why instead of reading a
 * reset. Nothing of it is parsed.
 *
 * The same slot per address bounds the bytes of request bodies being read at once (each body is held whole until it
 * ends): readBody takes each chunk from the connection's account, and a body past the address's share or the total is
 * answered 503 by its route (refuseBusy).
 */
import { readFileSync } from 'node:fs';
import type { Server, Socket } from 'node:net';
import { throttledWarning, type Log } from '#app/log';
import { chargeBodiesTo, MAX_BODY_BYTES, type BodyAccount } from './guards.ts';

export interface ConnectionLimits {
  /** Open connections in total. */
  max: number;
  /** Open connections from one remote address. */
  perPeer: number;
}

/** ... and the bytes of request bodies being read at once (readBody's `BodyAccount`, src/http/guards.ts), in total and per address. */
export interface ListenerLimits extends ConnectionLimits {
  bodies: { max: number; perPeer: number };
}

/** Bodies being read at once, by default; at least one whole body (1 MiB) may always be read. */
export const DEFAULT_BODY_BUFFER_BYTES = 64 * 1024 * 1024;

/** Open connections and the bytes of request bodies being read, now; connections and bodies refused since start. */
export interface ListenerCounts {
  open: number;
  refused: { total: number; peer: number };
  bodyBytes: number;
  bodiesRefused: number;
}

/** When the open-file limit cannot be read (not Linux). */
const UNKNOWN_LIMIT_MAX = 10_000;
/** What the defaults never exceed: each idle connection costs memory too. */
const DEFAULT_MAX_CEILING = 20_000;
const DEFAULT_MAX_FLOOR = 64;
/** How long a refused connection may stay open for its answer to be read. */
const LINGER_MS = 50;

/** The process's soft limit on open files, from /proc/self/limits (Linux; node raises it to the hard limit at start). */
export const openFileLimit = (read: () => string = () => readFileSync('/proc/self/limits', 'utf8')): number | undefined => {
  let text: string;
  try {
    text = read();
  } catch {
    return undefined;
  }
  const soft = /^Max open files\s+(\d+|unlimited)\s/m.exec(text)?.[1];
  if (soft === undefined) return undefined;
  return soft === 'unlimited' ? Number.POSITIVE_INFINITY : Number(soft);
};

/**
 * The defaults: a quarter of the open-file limit (at least 256) is left for everything that is not a client's
 * connection, at most 20,000 connections in total; one address may hold half of them.
 */
export const defaultConnectionLimits = (fdLimit: number | undefined): ConnectionLimits => {
  const max =
    fdLimit === undefined
      ? UNKNOWN_LIMIT_MAX
      : Number.isFinite(fdLimit)
        ? Math.max(DEFAULT_MAX_FLOOR, Math.min(DEFAULT_MAX_CEILING, fdLimit - Math.max(256, Math.floor(fdLimit / 4))))
        : DEFAULT_MAX_CEILING;
  return { max, perPeer: Math.max(1, Math.floor(max / 2)) };
};

/**
 * A given setting wins over the default; a per-address bound above the total is the total. One address may hold the
 * same share of the body bytes as of the connections (so setting ESTATE_MAX_CONNECTIONS_PER_PEER to the total behind
 * a load balancer lifts both), and never less than one whole body.
 */
export const resolveConnectionLimits = (given: Partial<ConnectionLimits> & { bodyBytes?: number }, fdLimit = openFileLimit()): ListenerLimits => {
  const defaults = defaultConnectionLimits(fdLimit);
  const max = given.max ?? defaults.max;
  const perPeer = Math.min(max, given.perPeer ?? (given.max === undefined ? defaults.perPeer : Math.max(1, Math.floor(max / 2))));
  const bodyBytes = Math.max(MAX_BODY_BYTES, given.bodyBytes ?? DEFAULT_BODY_BUFFER_BYTES);
  return { max, perPeer, bodies: { max: bodyBytes, perPeer: Math.max(MAX_BODY_BYTES, Math.floor((bodyBytes * perPeer) / max)) } };
};

/**
 * Whose share a connection counts against: an IPv4 address as it is (an IPv4-mapped IPv6 address as its IPv4 one), an
 * IPv6 address by its /64 prefix. One IPv6 client (a host, a home's or a cloud VM's network) is usually given a whole
 * /64, 2^64 addresses: counted per exact address, it could take every connection and the whole body budget.
 */
export const peerKey = (address: string | undefined): string => {
  if (address === undefined || address === '') return '';
  const plain = address.split('%')[0] ?? address; // a zone (fe80::1%eth0) is not part of the address
  if (!plain.includes(':')) return plain;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(plain);
  if (mapped?.[1]) return mapped[1];
  const groups = ipv6Groups(plain);
  return groups ? `${groups.slice(0, 4).join(':')}::/64` : plain;
};

/** The eight 16-bit groups of an IPv6 address, as lowercase hex without leading zeros; null when it does not parse. */
const ipv6Groups = (address: string): string[] | null => {
  let text = address.toLowerCase();
  // An IPv4 tail (64:ff9b::192.0.2.1) is two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if ((halves.length === 2 && missing < 1) || (halves.length === 1 && missing !== 0)) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  return groups.map((g) => parseInt(g, 16).toString(16));
};

const refusal = (what: string): string => {
  const body = JSON.stringify({ error: { code: 'too-many-connections', message: `Service Unavailable: ${what}; close idle connections or try again later` } });
  return (
    'HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncache-control: no-store\r\nretry-after: 1\r\n' +
    `connection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
};

/** One remote address's share: its open connections, and the bytes its requests' bodies hold while being read. */
interface PeerSlot {
  connections: number;
  bodyBytes: number;
  bodies: BodyAccount;
}

/**
 * Counts the listener's connections and refuses those past the limits; charges the bodies read on each admitted
 * connection to its address's slot and to the listener's total (readBody, src/http/guards.ts). Returns the counts
 * (for metrics). A request costs no lookup but readBody's one: the slot is found when the connection is made.
 */
export const limitConnections = (server: Server, limits: ListenerLimits, log: Log): (() => ListenerCounts) => {
  let open = 0;
  let bodyBytes = 0;
  let bodiesRefused = 0;
  const peers = new Map<string, PeerSlot>();
  const refused = { total: 0, peer: 0 };
  const warn = {
    total: throttledWarning(log, 'connections refused: the server holds its maximum'),
    peer: throttledWarning(log, 'connections refused: one address holds its maximum'),
    body: throttledWarning(log, 'request bodies refused: reading them would pass the body budget'),
  };
  const answers = {
    total: refusal(`the server holds its maximum of ${limits.max} connections (ESTATE_MAX_CONNECTIONS)`),
    peer: refusal(`this address holds its maximum of ${limits.perPeer} connections (ESTATE_MAX_CONNECTIONS_PER_PEER)`),
  };
  const bodyRefusal =
    `Service Unavailable: request bodies being read hold their maximum (${limits.bodies.max} bytes in all, ` +
    `${limits.bodies.perPeer} from one address; ESTATE_MAX_BODY_BUFFER_BYTES); send the body at once or try again later`;

  // A slot goes when its address has no connection and no body held (a body read past its connection's close gives
  // its bytes back when its request ends).
  const forget = (peer: string, slot: PeerSlot): void => {
    if (slot.connections === 0 && slot.bodyBytes === 0 && peers.get(peer) === slot) peers.delete(peer);
  };
  const slotOf = (peer: string): PeerSlot => {
    const known = peers.get(peer);
    if (known) return known;
    const slot: PeerSlot = {
      connections: 0,
      bodyBytes: 0,
      bodies: {
        refusal: bodyRefusal,
        take(bytes) {
          if (bodyBytes + bytes > limits.bodies.max || slot.bodyBytes + bytes > limits.bodies.perPeer) {
            bodiesRefused++;
            warn.body({ peer, ...limits.bodies });
            return false;
          }
          bodyBytes += bytes;
          slot.bodyBytes += bytes;
          return true;
        },
        give(bytes) {
          bodyBytes -= bytes;
          slot.bodyBytes -= bytes;
          forget(peer, slot);
        },
      },
    };
    peers.set(peer, slot);
    return slot;
  };

  const refuse = (socket: Socket, reason: 'total' | 'peer', peer: string): void => {
    refused[reason]++;
    warn[reason](reason === 'peer' ? { reason, peer, perPeer: limits.perPeer } : { reason, max: limits.max });
    socket.on('error', () => undefined);
    // What it sent is read and dropped: closing with bytes unread resets the connection, and a reset can destroy the
    // answer before the client reads it. Closed when the client closes, or 50 ms on whatever it does (a flood of
    // refused connections must not hold descriptors).
    socket.resume();
    socket.end(answers[reason]);
    const gone = setTimeout(() => socket.destroy(), LINGER_MS);
    gone.unref();
    socket.once('close', () => clearTimeout(gone));
  };

  // The server's own connection listeners (node:http's parser set-up) run for admitted connections only: a refused
  // one is never read, so nothing it sent is parsed, let alone served.
  const admit = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const peer = peerKey(socket.remoteAddress);
    if (open >= limits.max) return refuse(socket, 'total', peer);
    if ((peers.get(peer)?.connections ?? 0) >= limits.perPeer) return refuse(socket, 'peer', peer);
    const slot = slotOf(peer);
    open++;
    slot.connections++;
    chargeBodiesTo(socket, slot.bodies);
    socket.once('close', () => {
      open--;
      slot.connections--;
      forget(peer, slot);
    });
    for (const listener of admit) listener.call(server, socket);
  });

  return () => ({ open, refused: { ...refused }, bodyBytes, bodiesRefused });
};
