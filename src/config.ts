/**
 * Configuration: flag, else environment, else default (SPEC §5). Checked with zod so a typo fails at start, loudly.
 */
import { userInfo } from 'node:os';
import { z } from 'zod';
import { DomainError } from './domain/errors.ts';

export const DEFAULT_STORE = 'sqlite:.estate/estate.db';
export const DEFAULT_TOPIC = 'estate.catalogue.changes';

/** Defaults of the session limits (docs/security.md). */
export const SESSION_LIMIT_DEFAULTS = { sessionIdleMs: 30 * 60 * 1000, maxSessionsPerSubject: 100, maxSessions: 10_000 } as const;
/** Defaults of the 2025-03-26 batch bound (docs/security.md). */
export const BATCH_LIMIT_DEFAULTS = { maxBatchMessages: 100, maxBatchBytes: 256 * 1024 } as const;

const positiveInt = (name: string) =>
  z.coerce.number({ error: `${name} must be a number` }).int(`${name} must be a whole number`).positive(`${name} must be positive`);

const configSchema = z.object({
  store: z.string().min(1),
  bus: z.string().regex(/^(local|kafka:\/\/[^,\s]+(,[^,\s]+)*)$/, 'bus must be `local` or kafka://host:port[,host:port]'),
  topic: z.string().min(1),
  pageSize: positiveInt('ESTATE_PAGE_SIZE').max(500, 'ESTATE_PAGE_SIZE must be at most 500'),
  listTtlMs: positiveInt('ESTATE_LIST_TTL_MS'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  actor: z.string().min(1),
  /** Stateful HTTP sessions (docs/security.md): idle expiry, and caps per subject and in total. */
  sessionIdleMs: positiveInt('ESTATE_SESSION_IDLE_MS'),
  maxSessionsPerSubject: positiveInt('ESTATE_MAX_SESSIONS_PER_SUBJECT'),
  maxSessions: positiveInt('ESTATE_MAX_SESSIONS'),
  /** A 2025-03-26 JSON-RPC batch: at most this many messages, and this many bytes. */
  maxBatchMessages: positiveInt('ESTATE_MAX_BATCH_MESSAGES').max(10_000, 'ESTATE_MAX_BATCH_MESSAGES must be at most 10000'),
  maxBatchBytes: positiveInt('ESTATE_MAX_BATCH_BYTES').max(1024 * 1024, 'ESTATE_MAX_BATCH_BYTES must be at most 1048576 (the body limit)'),
  /** Signs 2026-07-28 requestStates; replicas behind one endpoint must share it. Absent: a random key per process. */
  stateKey: z.string().min(1).optional(),
});

export type EstateConfig = z.infer<typeof configSchema>;

export interface ConfigFlags {
  store?: string;
  bus?: string;
  by?: string;
}

const osUser = (): string => {
  try {
    return userInfo().username || 'unknown';
  } catch {
    return 'unknown';
  }
};

export const loadConfig = (flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): EstateConfig => {
  const raw = {
    store: flags.store ?? env.ESTATE_STORE ?? DEFAULT_STORE,
    bus: flags.bus ?? env.ESTATE_BUS ?? 'local',
    topic: env.ESTATE_TOPIC ?? DEFAULT_TOPIC,
    pageSize: env.ESTATE_PAGE_SIZE ?? 500,
    listTtlMs: env.ESTATE_LIST_TTL_MS ?? 60_000,
    logLevel: env.ESTATE_LOG_LEVEL ?? 'info',
    actor: flags.by ?? env.ESTATE_ACTOR ?? osUser(),
    sessionIdleMs: env.ESTATE_SESSION_IDLE_MS ?? SESSION_LIMIT_DEFAULTS.sessionIdleMs,
    maxSessionsPerSubject: env.ESTATE_MAX_SESSIONS_PER_SUBJECT ?? SESSION_LIMIT_DEFAULTS.maxSessionsPerSubject,
    maxSessions: env.ESTATE_MAX_SESSIONS ?? SESSION_LIMIT_DEFAULTS.maxSessions,
    maxBatchMessages: env.ESTATE_MAX_BATCH_MESSAGES ?? BATCH_LIMIT_DEFAULTS.maxBatchMessages,
    maxBatchBytes: env.ESTATE_MAX_BATCH_BYTES ?? BATCH_LIMIT_DEFAULTS.maxBatchBytes,
    ...(env.ESTATE_STATE_KEY ? { stateKey: env.ESTATE_STATE_KEY } : {}),
  };
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new DomainError('usage', 'bad-config', `configuration: ${i?.path.join('.') ?? ''}: ${i?.message ?? 'invalid'}`);
  }
  return parsed.data;
};
