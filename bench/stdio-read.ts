/**
 * Reading a stdio upstream's output (src/upstream/stdio-answers.ts): the serving thread's time to frame and parse
 * what the pipe delivers, Estate's reader beside the MCP SDK's ReadBuffer (which StdioClientTransport uses), on the
 * same bytes in the pipe's 64 KiB chunks: one 10 MiB answer (the SDK's bound per message), 20,000 answers of 1 KiB, and
 * 1 MiB of lines that are not messages (`{` and empty lines: what a hostile or broken upstream can write; Estate's
 * reader closes the connection past MAX_JUNK_LINES of them, the SDK's parses every one). Medians of 5 runs each, the
 * two alternating. Runnable alone: `node --import tsx bench/stdio-read.ts`.
 */
import { ReadBuffer } from '@modelcontextprotocol/client';
import { AnswerLines } from '#upstream/stdio-answers';
import type { BenchRow } from './lib.ts';

const CHUNK = 64 * 1024;
const RUNS = 5;

interface Reader {
  append(chunk: Buffer): void;
  readMessage(): unknown;
}

const answer = (id: number, textBytes: number): string => `${JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'x'.repeat(textBytes) }] } })}\n`;

/** Milliseconds to read `bytes` through `reader`, chunk by chunk, taking every message as the SDK's transport does. */
const readAll = (reader: Reader, bytes: Buffer, expected: number | 'closed'): number => {
  let messages = 0;
  let closed = false;
  const t0 = performance.now();
  try {
    for (let i = 0; i < bytes.length; i += CHUNK) {
      reader.append(bytes.subarray(i, i + CHUNK));
      while (reader.readMessage() !== null) messages++;
    }
  } catch (e) {
    // The reader gave up on the connection (the transport closes it): how long it took to decide is the figure.
    if (expected !== 'closed') throw e;
    closed = true;
  }
  const ms = performance.now() - t0;
  if (expected === 'closed' ? !closed && messages !== 0 : messages !== expected) throw new Error(`read ${messages} messages, expected ${expected}`);
  return ms;
};

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

export const run = async (): Promise<BenchRow[]> => {
  const cases = [
    { name: 'one 10 MiB answer', bytes: Buffer.from(answer(1, 10 * 1024 * 1024 - 200)), messages: 1 },
    { name: '20,000 answers of 1 KiB', bytes: Buffer.from(Array.from({ length: 20_000 }, (_, i) => answer(i, 1024)).join('')), messages: 20_000 },
    { name: '1 MiB of lines that are not messages', bytes: Buffer.from('{\n\n'.repeat(1024 * 1024 / 3)), messages: 'closed' as const },
  ];
  const rows: BenchRow[] = [];
  for (const c of cases) {
    const estate: number[] = [];
    const sdk: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      estate.push(readAll(new AnswerLines(), c.bytes, c.messages));
      sdk.push(readAll(new ReadBuffer(), c.bytes, c.messages === 'closed' ? 0 : c.messages));
    }
    rows.push({
      bench: 'upstream',
      case: `stdio upstream output read, ${c.name} in 64 KiB chunks`,
      unit: 'ms',
      estate: Math.round(median(estate) * 10) / 10,
      peerName: "MCP SDK's ReadBuffer (StdioClientTransport)",
      peer: Math.round(median(sdk) * 10) / 10,
      notes: `${(c.bytes.length / 1024 / 1024).toFixed(1)} MiB; median of ${RUNS}; the serving thread's time, other callers wait${c.messages === 'closed' ? '; Estate: until it closes the connection (MAX_JUNK_LINES), the SDK: parsing every line' : ''}`,
    });
  }
  return rows;
};

if (import.meta.url === `file://${process.argv[1]}`) console.table(await run());
