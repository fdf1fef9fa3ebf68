/** A handler's ctx.log over the one logger port: either order in, fields first out. */
import { describe, expect, it } from 'vitest';
import type { Log } from '#app/log';
import { handlerLogOver } from '#handlers/handler-log';

const recording = (): Log & { lines: unknown[][] } => {
  const lines: unknown[][] = [];
  const at = (level: string) => (...args: unknown[]) => void lines.push([level, ...args]);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
};

describe('handlerLogOver', () => {
  it('message first, as the handler API types it', () => {
    const log = recording();
    const h = handlerLogOver(log);
    h.info('quoted', { pair: 'EUR/USD' });
    h.warn('plain');
    expect(log.lines).toEqual([
      ['info', { pair: 'EUR/USD' }, 'quoted'],
      ['warn', {}, 'plain'],
    ]);
  });
  it("pino's order from a JavaScript handler reads the same, instead of logging an object as the message", () => {
    const log = recording();
    const h = handlerLogOver(log) as unknown as Log;
    h.error({ reference: 'r1' }, 'payment looked up');
    h.debug({ only: 'fields' });
    expect(log.lines).toEqual([
      ['error', { reference: 'r1' }, 'payment looked up'],
      ['debug', { only: 'fields' }],
    ]);
  });
  it('odd arguments from untyped code neither throw nor invent fields', () => {
    const log = recording();
    const h = handlerLogOver(log) as unknown as { info(...a: unknown[]): void };
    h.info(42, null);
    h.info('m', 'not fields');
    expect(log.lines).toEqual([['info', {}], ['info', {}, 'm']]);
  });
});
