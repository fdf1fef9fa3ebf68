/**
 * Checks done on an HTTP request before any MCP code (ours or the SDK's) sees it: Host and Origin against allow
 * lists (DNS rebinding), the JSON content type, and the 1 MiB body bound.
 */
import type { IncomingMessage } from 'node:http';

export const MAX_BODY_BYTES = 1024 * 1024;
export const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/** `host:port` or `[v6]:port` → the host name as listed (`[::1]` keeps its brackets). */
export const hostnameOf = (hostHeader: string): string => {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return colon >= 0 ? h.slice(0, colon) : h;
};

export const hostAllowed = (hostHeader: string | undefined, allowed: readonly string[]): boolean =>
  hostHeader !== undefined && allowed.includes(hostnameOf(hostHeader));

/** A request without Origin (not a browser) passes; a present one must parse and be listed. */
export const originAllowed = (origin: string | undefined, allowed: readonly string[]): boolean => {
  if (origin === undefined) return true;
  try {
    const u = new URL(origin);
    return allowed.includes(u.hostname.toLowerCase()) || allowed.includes(origin.toLowerCase());
  } catch {
    return false;
  }
};

export const isJsonContentType = (ct: string | undefined): boolean => {
  if (!ct) return false;
  const type = ct.split(';')[0]?.trim().toLowerCase();
  return type === 'application/json';
};

export type BodyRead = { ok: true; text: string } | { ok: false; tooLarge: true };

export const readBody = (req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<BodyRead> =>
  new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      return resolve({ ok: false, tooLarge: true });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(over ? { ok: false, tooLarge: true } : { ok: true, text: Buffer.concat(chunks).toString('utf8') }));
    req.on('error', reject);
  });
