/**
 * Configuration: flag, else environment, else default (SPEC §5). Checked with zod so a typo fails at start, loudly.
 */
import { userInfo } from 'node:os';
import { z } from 'zod';
import { DomainError } from './domain/errors.ts';

export const DEFAULT_STORE = 'sqlite:.estate/estate.db';
export const DEFAULT_TOPIC = 'estate.catalogue.changes';

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
    ...(env.ESTATE_STATE_KEY ? { stateKey: env.ESTATE_STATE_KEY } : {}),
  };
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new DomainError('usage', 'bad-config', `configuration: ${i?.path.join('.') ?? ''}: ${i?.message ?? 'invalid'}`);
  }
  return parsed.data;
};
