/**
 * The server's log lines are JSON read by people too (`tail -f`): what a caller or an upstream sent reaches them with
 * its hidden characters as `\uXXXX` escapes, the same value to a parser, never raw (a C1 control opens an escape
 * sequence on many terminals; a bidirectional override makes a line read as another).
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '#compose/logger';

const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u{FE00}-\u{FE0F}\u{E0100}-\u{E01EF}]/u;

describe('log lines', () => {
  it('write hidden characters as JSON escapes, and parse back to what was logged', () => {
    const lines: string[] = [];
    const log = createLogger('info', { write: (s: string) => void lines.push(s) });
    const tool = 'pay\u202Ements\u009B2J';
    const client = `agent${String.fromCodePoint(0xe0041)}\u200B`;
    log.warn({ tool, client }, `unknown tool ${tool}`);
    log.child({ run: 'r\u2028x' }).info({}, 'plain');
    expect(lines).toHaveLength(2);
    for (const line of lines) expect([...line.trimEnd()].filter((c) => HIDDEN.test(c))).toEqual([]);
    const first = JSON.parse(lines[0] as string) as Record<string, unknown>;
    expect([first.tool, first.client, first.msg]).toEqual([tool, client, `unknown tool ${tool}`]);
    expect(lines[0]).toContain('pay\\u202ements\\u009b2J');
    expect((JSON.parse(lines[1] as string) as Record<string, unknown>).run).toBe('r\u2028x');
  });
});
