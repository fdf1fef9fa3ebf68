/**
 * The stdio upstream reader (src/upstream/stdio-answers.ts): it frames what the pipe delivers as the SDK's ReadBuffer
 * does (a property over random messages cut into random chunks, lines that are not JSON and CRLF endings among them),
 * keeps the SDK's bound on one message, charges each answer to the account its request was sent from and drops one
 * the account refuses (ending that call), and is installed on the pinned SDK's StdioClientTransport.
 */
import { ReadBuffer, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AnswerBudget, MAX_UPSTREAM_BODY_BYTES } from '#upstream/answer-budget';
import { LinePace } from '#upstream/event-pace';
import { AnswerLines, MAX_JUNK_LINES, MAX_LINES_PER_SECOND, useAnswerLines } from '#upstream/stdio-answers';

const drain = (r: { readMessage(): unknown }): unknown[] => {
  const out: unknown[] = [];
  for (let m = r.readMessage(); m !== null; m = r.readMessage()) out.push(m);
  return out;
};

const messageArb = fc.oneof(
  fc.record({ jsonrpc: fc.constant('2.0' as const), id: fc.nat(), result: fc.record({ text: fc.string({ unit: 'binary', maxLength: 40 }) }) }),
  fc.record({ jsonrpc: fc.constant('2.0' as const), method: fc.constant('notifications/progress'), params: fc.record({ progressToken: fc.string(), progress: fc.nat() }) }),
  fc.record({ jsonrpc: fc.constant('2.0' as const), id: fc.nat(), method: fc.constant('ping') }),
);
const lineArb = fc.oneof(
  { weight: 6, arbitrary: messageArb.map((m) => `${JSON.stringify(m)}\n`) },
  { weight: 1, arbitrary: messageArb.map((m) => `${JSON.stringify(m)}\r\n`) },
  { weight: 1, arbitrary: fc.constantFrom('not json\n', '\n', '{"half":\n') },
);

describe('AnswerLines', () => {
  it('reads what the SDK ReadBuffer reads, however the pipe cuts the bytes', () => {
    fc.assert(
      fc.property(fc.array(lineArb, { maxLength: 30 }), fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 20 }), (lines, cuts) => {
        const bytes = Buffer.from(lines.join(''));
        const ours = new AnswerLines();
        const sdk = new ReadBuffer();
        const a: unknown[] = [];
        const b: unknown[] = [];
        for (let at = 0, k = 0; at < bytes.length; k++) {
          const chunk = bytes.subarray(at, at + (cuts[k % cuts.length] as number));
          at += chunk.length;
          ours.append(chunk);
          sdk.append(chunk);
          a.push(...drain(ours));
          b.push(...drain(sdk));
          expect(a).toEqual(b);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the SDK bound on one message: past it the append throws and what was held is cleared', () => {
    const lines = new AnswerLines(100);
    lines.append(Buffer.from('{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":'));
    expect(drain(lines)).toEqual([{ jsonrpc: '2.0', method: 'a' }]);
    expect(() => lines.append(Buffer.alloc(90, 0x20))).toThrow('ReadBuffer exceeded maximum size of 100 bytes');
    lines.append(Buffer.from('{"jsonrpc":"2.0","method":"b"}\n'));
    expect(drain(lines)).toEqual([{ jsonrpc: '2.0', method: 'b' }]);
  });

  it("charges an answer to the account its request was sent from, and drops one past the upstream's share", async () => {
    const budget = new AnswerBudget(2 * MAX_UPSTREAM_BODY_BYTES); // a share of one whole answer
    const lines = new AnswerLines(64 * 1024 * 1024);
    /** What the pipe delivers, in its 64 KiB chunks, each taken as the SDK's transport takes them. */
    const feed = (bytes: Buffer): unknown[] => {
      const out: unknown[] = [];
      for (let i = 0; i < bytes.length; i += 65536) {
        lines.append(bytes.subarray(i, i + 65536));
        out.push(...drain(lines));
      }
      return out;
    };
    const request = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, method: 'tools/list' });
    const answer = (id: number, bytes: number) => Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id, result: { tools: [], pad: 'x'.repeat(bytes) } })}\n`);

    await budget.within('fx', async (account) => {
      lines.sent(request(1));
      lines.sent(request(2));
      const first = answer(1, 40 * 1024 * 1024 - 100);
      expect(feed(first)).toHaveLength(1);
      expect(budget.counts().held).toBe(first.length - 1);
      // The second page would pass the 64 MiB share: dropped, and the listing ends with the refusal.
      expect(feed(answer(2, 30 * 1024 * 1024))).toEqual([]);
      expect(account.signal.aborted).toBe(true);
      expect((account.signal.reason as Error).message).toBe(`upstream fx's answers held at once would pass ${MAX_UPSTREAM_BODY_BYTES} bytes (its share of ESTATE_MAX_UPSTREAM_BUFFER_BYTES)`);
    });
    expect(budget.counts()).toMatchObject({ held: 0, refused: new Map([['fx', 1]]) });

    // Outside any account (the handshake), and what the upstream sends unasked, nothing is charged.
    lines.sent(request(3));
    expect(feed(Buffer.concat([answer(3, 10), Buffer.from('{"jsonrpc":"2.0","id":"q1","method":"elicitation/create","params":{}}\n')]))).toHaveLength(2);
    expect(budget.counts().held).toBe(0);
  });

  it('is installed on the pinned SDK StdioClientTransport (an upgrade that moves its reader fails here)', () => {
    const t = new StdioClientTransport({ command: process.execPath });
    expect(useAnswerLines(t)).toBe(true);
    expect((t as unknown as { _readBuffer: unknown })._readBuffer).toBeInstanceOf(AnswerLines);
  });
});

describe('AnswerLines and lines that are not messages', () => {
  it(`passes over up to ${MAX_JUNK_LINES} of them; past that it reads nothing more and its next append closes the connection`, () => {
    const lines = new AnswerLines();
    lines.append(Buffer.from(`${'\n  \r\nnot json\n{"half":\n'.repeat(MAX_JUNK_LINES / 4)}{"jsonrpc":"2.0","method":"ok"}\n`));
    expect(drain(lines)).toEqual([{ jsonrpc: '2.0', method: 'ok' }]);
    lines.append(Buffer.from('{\n{"jsonrpc":"2.0","method":"after"}\n'));
    expect(drain(lines)).toEqual([]);
    expect(() => lines.append(Buffer.from('{"jsonrpc":"2.0","method":"later"}\n'))).toThrow(`the upstream sent more than ${MAX_JUNK_LINES} lines that are not JSON-RPC messages`);
  });
});

describe('AnswerLines and a flood of messages', () => {
  afterEach(() => vi.useRealTimers());

  it(`reads ${MAX_LINES_PER_SECOND} lines in one second; past that nothing more, and its next append closes the connection`, () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-12-01T00:00:00.100Z'));
    const lines = new AnswerLines();
    const note = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n';
    lines.append(Buffer.from(note.repeat(MAX_LINES_PER_SECOND)));
    expect(drain(lines)).toHaveLength(MAX_LINES_PER_SECOND);
    // The next second starts a new count.
    vi.setSystemTime(new Date('2026-12-01T00:00:01.000Z'));
    lines.append(Buffer.from(note.repeat(MAX_LINES_PER_SECOND)));
    expect(drain(lines)).toHaveLength(MAX_LINES_PER_SECOND);
    lines.append(Buffer.from(note.repeat(2)));
    expect(drain(lines)).toEqual([]);
    expect(() => lines.append(Buffer.from(note))).toThrow(`the upstream sent more than ${MAX_LINES_PER_SECOND} lines in one second`);
  });

  it('asks to hold the output for what a chunk takes past the pace, every message of it still read', () => {
    let now = 0;
    const held: number[] = [];
    const lines = new AnswerLines(undefined, (ms) => held.push(ms), new LinePace(1000, () => now));
    const note = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n';
    lines.append(Buffer.from(note.repeat(100))); // the burst: a tenth of a second's lines
    expect(held).toEqual([]);
    lines.append(Buffer.from(note.repeat(400)));
    expect(held).toEqual([400]); // 400 lines past the burst at 1,000 a second
    expect(drain(lines)).toHaveLength(500);
    now = 1000;
    lines.append(Buffer.from(note.repeat(100)));
    expect(held).toEqual([400]); // paid back, and the burst whole again
  });
});

describe('AnswerLines and JSON that is no JSON-RPC message', () => {
  it('reports each as the SDK does, and counts it against the same bound', () => {
    const lines = new AnswerLines();
    lines.append(Buffer.from('{}\n'.repeat(MAX_JUNK_LINES + 1)));
    let reported = 0;
    for (;;) {
      try {
        if (lines.readMessage() === null) break;
      } catch {
        reported++; // the SDK's transport catches it, reports it and reads on
      }
    }
    expect(reported).toBe(MAX_JUNK_LINES + 1);
    expect(() => lines.append(Buffer.from('{"jsonrpc":"2.0","method":"later"}\n'))).toThrow(`more than ${MAX_JUNK_LINES} lines that are not JSON-RPC messages`);
  });
});
