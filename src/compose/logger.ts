/** pino JSON logs on stderr: stdout belongs to the protocol on stdio, and is kept clean everywhere for symmetry. */
import { pino, type Logger } from 'pino';

export const createLogger = (level: string): Logger => pino({ level, base: { service: 'estate' } }, pino.destination({ dest: 2, sync: true }));
