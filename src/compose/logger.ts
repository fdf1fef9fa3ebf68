/** The logger adapter: pino JSON lines on stderr (stdout belongs to the protocol on stdio, and is kept clean everywhere). */
import { pino, type DestinationStream } from 'pino';
import type { RootLog } from '#app/log';
import { jsonVisible } from '#domain/visible-text';

/**
 * Each line is written with its hidden characters as `\uXXXX` escapes (jsonVisible: the same value to a parser). A log
 * line carries what callers and upstreams sent (a tool name, a client's name, a refusal's reason), and JSON escapes
 * only U+0000–U+001F: a C1 control (U+009B opens an escape sequence on many terminals), a bidirectional override or
 * tag characters reached an operator's `tail -f` raw, and could make a line read as another.
 */
export const createLogger = (level: string, destination: DestinationStream = pino.destination({ dest: 2, sync: true })): RootLog =>
  pino({ level, base: { service: 'estate' }, hooks: { streamWrite: jsonVisible } }, destination);
