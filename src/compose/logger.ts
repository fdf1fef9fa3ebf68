/** The logger adapter: pino JSON lines on stderr (stdout belongs to the protocol on stdio, and is kept clean everywhere). */
import { pino } from 'pino';
import type { RootLog } from '#app/log';

export const createLogger = (level: string): RootLog => pino({ level, base: { service: 'estate' } }, pino.destination({ dest: 2, sync: true }));
