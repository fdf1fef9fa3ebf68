/**
 * The README's CLI walkthrough, run line by line exactly as README.md has it (extracted from the file, so the test
 * breaks when the text drifts): each `# → <text>` comment must appear in what the line prints, and each line exits 0
 * unless its comment says `(exit N)`. Then the README's audit walkthrough: serve the walk's store with the example
 * handlers module, call the tool, read `_meta["io.estate/runId"]`, and find the call with `estate calls <runId>`.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ESTATE_BIN, makeTempStore, REPO_ROOT, runCli, startStdioServer, type TempStore } from './helpers.ts';

const README = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');

/** The first ```sh block after a heading. */
const shBlock = (heading: string): string[] => {
  const from = README.indexOf(heading);
  expect(from, `README has no '${heading}'`).toBeGreaterThanOrEqual(0);
  const m = /```sh\n([\s\S]*?)```/.exec(README.slice(from));
  expect(m, `no sh block after '${heading}'`).not.toBeNull();
  return (m as RegExpExecArray)[1]!.split('\n');
};

interface Step {
  line: string;
  command: string;
  expectText?: string;
  expectExit: number;
}

const walkthrough = (): { storeArgs: string; steps: Step[] } => {
  const lines = shBlock('## A walk through the CLI');
  const alias = /^alias estate='npx estate ([^']*)'/.exec(lines[0] ?? '');
  expect(alias, `the walkthrough starts with an alias giving estate its own store: ${lines[0]}`).not.toBeNull();
  const storeArgs = (alias as RegExpExecArray)[1]!;
  const steps: Step[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    const heredoc = /<<'(\w+)'$/.exec(line);
    if (heredoc) {
      const end = lines.indexOf(heredoc[1]!, i + 1);
      expect(end).toBeGreaterThan(i);
      const command = lines.slice(i, end + 1).join('\n');
      steps.push({ line, command, expectExit: 0 });
      i = end;
      continue;
    }
    const hash = line.indexOf(' # ');
    const command = hash < 0 ? line : line.slice(0, hash).trimEnd();
    const comment = hash < 0 ? '' : line.slice(hash + 3).trim();
    let expectText: string | undefined;
    let expectExit = 0;
    if (comment.startsWith('→')) {
      expectText = comment.slice(1).trim();
      const exit = /\s*\(exit (\d+)\)$/.exec(expectText);
      if (exit) {
        expectExit = Number(exit[1]);
        expectText = expectText.slice(0, exit.index);
      }
    }
    steps.push({ line, command, ...(expectText !== undefined ? { expectText } : {}), expectExit });
  }
  return { storeArgs, steps };
};

const bash = (script: string, cwd: string): Promise<{ code: number | null; out: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { cwd, env: { ...process.env, ESTATE_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });

let t: TempStore;
beforeAll(() => {
  t = makeTempStore('estate-readme-');
});
afterAll(() => t.cleanup());

describe('README: a walk through the CLI', () => {
  it('every line prints what its comment says, with the exit code it says', async () => {
    const { storeArgs, steps } = walkthrough();
    expect(storeArgs).toMatch(/--store sqlite:\w+\.db/); // its own store, never the demo's .estate/estate.db
    expect(steps.filter((s) => s.expectText !== undefined).length).toBeGreaterThanOrEqual(12);
    // `estate` as the alias defines it, with this checkout's bin instead of npx (same program, no npm start-up).
    const prelude = `set -o pipefail; estate() { node ${JSON.stringify(ESTATE_BIN)} ${storeArgs} "$@"; }\n`;
    for (const step of steps) {
      const r = await bash(prelude + step.command, t.dir);
      expect(r.code, `${step.line}\n${r.out}`).toBe(step.expectExit);
      if (step.expectText !== undefined) expect(r.out, step.line).toContain(step.expectText);
    }
  }, 300_000);

  it('the audit walkthrough: call a tool, read _meta["io.estate/runId"], find the call with estate calls <runId>', async () => {
    // The README's serve command, on stdio instead of HTTP (same store, handlers module and principal).
    const serveLine = shBlock('## Calling a tool and auditing the call').join(' ').replace(/\\\s+/g, ' ');
    const m = /npx estate serve --http --port \d+ (.*)$/.exec(serveLine.trim());
    expect(m, serveLine).not.toBeNull();
    const args = (m as RegExpExecArray)[1]!.trim().split(/\s+/);
    expect(args).toContain('examples/lookup-handlers.mjs');
    const store = args[args.indexOf('--store') + 1]!;
    const absolute = args.map((a) => (a === store ? `sqlite:${join(t.dir, store.slice('sqlite:'.length))}` : a === 'examples/lookup-handlers.mjs' ? join(REPO_ROOT, a) : a));
    const server = await startStdioServer(absolute, { cwd: t.dir });
    try {
      await server.initialize();
      const list = await server.request('tools/list', {});
      expect((list.result as { tools: { name: string; _meta: Record<string, unknown> }[] }).tools.map((x) => [x.name, x._meta['io.estate/version']])).toEqual([['payments.lookup', '1.0.0']]);
      const call = await server.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771', include_legs: true } });
      const result = call.result as { content: { text: string }[]; isError?: boolean; _meta: Record<string, unknown> };
      expect(result.isError ?? false).toBe(false);
      expect(result.content[0]?.text).toBe('PMT-771: HELD, 250000 AED, legs: ACC-1001 -> NOSTRO-AED; NOSTRO-AED -> ACC-2002');
      const runId = String(result._meta['io.estate/runId']);
      expect(runId.length).toBeGreaterThan(0);
      const calls = await runCli(['calls', runId, '--store', absolute[absolute.indexOf('--store') + 1]!]);
      expect(calls.code, calls.stderr).toBe(0);
      expect(calls.stdout).toMatch(/ {2}payments\.lookup@1\.0\.0 {2}ok /);
      expect(calls.stdout).toContain('/acme');
    } finally {
      await server.stop();
    }
  }, 120_000);

  it('docs/clients.md: every JSON block parses, and its stdio configurations start and serve as written', async () => {
    const md = readFileSync(join(REPO_ROOT, 'docs', 'clients.md'), 'utf8');
    const blocks = [...md.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as Record<string, Record<string, { command?: string; args?: string[]; url?: string }>>);
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    const stdio = blocks.flatMap((b) => Object.values(b.mcpServers ?? {})).filter((c) => c.command === 'node');
    expect(stdio).toHaveLength(2);
    for (const config of stdio) {
      // The clone is this checkout; the stores go to the test's temp dir (the walk's store is the one the walkthrough filled).
      const args = config.args!.map((a) =>
        a
          .replace('/home/me/estate/bin/', join(REPO_ROOT, 'bin') + '/')
          .replace('/home/me/estate/examples/', join(REPO_ROOT, 'examples') + '/')
          .replace('/home/me/estate/.estate/', `${t.dir}/`)
          .replace('/home/me/estate/', `${t.dir}/`),
      );
      expect(args[0]).toBe(ESTATE_BIN);
      expect(args.slice(1, 3)).toEqual(['serve', '--stdio']);
      for (const a of args) if (a.startsWith('sqlite:') || a.endsWith('.mjs')) expect(a.replace('sqlite:', '')).toMatch(/^\//); // absolute, as the page says
      const server = await startStdioServer(args.slice(3), { cwd: t.dir });
      try {
        await server.initialize();
        const list = await server.request('tools/list', {});
        const names = (list.result as { tools: { name: string }[] }).tools.map((x) => x.name);
        expect(names).toContain('payments.lookup');
      } finally {
        await server.stop();
      }
    }
  }, 180_000);
});
