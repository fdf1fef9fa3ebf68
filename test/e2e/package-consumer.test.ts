/**
 * The package as a separate project sees it (SPEC §10): `npm pack` of a copy of the checkout (which runs `prepare`,
 * the build, there), the tarball unpacked into a temp project's node_modules with the dependencies linked from this checkout (the machine may be
 * offline, and there is no registry to install them from), then `tsc` type-checks a handler module and an agent script
 * against the package's declarations (and a wrongly typed handler must NOT type-check), and both run: the packaged
 * `estate` binary publishes and serves with the compiled handler module, and the agent lists and calls through
 * `estate/client`'s cache.
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers.ts';

const TSC = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

const HANDLER = `import { defineHandlers, type HandlerContext, type CallToolResult } from 'estate';

export default defineHandlers({
  'demo.echo': async (args: Record<string, unknown>, ctx: HandlerContext): Promise<CallToolResult> => {
    ctx.log.info('echo', { runId: ctx.runId });
    return { content: [{ type: 'text', text: String(args.text) + ' from ' + ctx.tool.name + '@' + ctx.tool.version }] };
  },
});
`;

const AGENT = `import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createToolsCache, type ToolsCacheStats } from 'estate/client';
import { createDeduplicator, decodeChange } from 'estate/changes';

const client = new Client({ name: 'consumer', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2] ?? '')));
const cache = createToolsCache(client);
const tools = await cache.list();
await cache.list();
const result = await cache.call('demo.echo', { text: 'hello' });
const stats: ToolsCacheStats = cache.stats();
const change = decodeChange('{"type":"catalogue.changed","position":"7","tool":"demo.echo","version":"1.0.0","event":"ToolVersionPublished","at":"2026-01-01T00:00:00Z"}');
const dedupe = createDeduplicator();
console.log(JSON.stringify({ tools: tools.map((t) => t.name), content: result.content, version: result._meta?.['io.estate/version'], stats: { hits: stats.hits, misses: stats.misses }, firstTwice: [dedupe.first(change), dedupe.first(change)] }));
await cache.close();
await client.close();
`;

const BAD = `import { defineHandlers } from 'estate';
export default defineHandlers({ 'demo.echo': (args: Record<string, unknown>) => 42 });
`;

const DEFINITION = {
  name: 'demo.echo',
  version: '1.0.0',
  description: 'Echoes its text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  access: { requiredScopes: [], tenants: [], classification: 'public' },
  sideEffect: 'none',
  handler: 'demo.echo',
};

describe('the packed package, installed into a separate project', () => {
  let dir: string;
  let estateBin: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'estate-consumer-'));
    // Packed from a copy of the checkout: `prepare` rebuilds dist/, and in this checkout that swap would pull dist/ from
    // under the other test files' processes loading from it (a CI run lost `estate publish` to ERR_MODULE_NOT_FOUND).
    const source = join(dir, 'source');
    const skip = new Set(['node_modules', '.git', '.cache', 'dist']);
    cpSync(REPO_ROOT, source, { recursive: true, filter: (from) => !skip.has(relative(REPO_ROOT, from).split(sep)[0] ?? '') && !/^dist\./.test(relative(REPO_ROOT, from)) });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(source, 'node_modules'));
    const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: source, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) as { filename: string }[];
    const modules = join(dir, 'node_modules');
    mkdirSync(join(modules, 'estate'), { recursive: true });
    execFileSync('tar', ['-xzf', join(dir, packed[0]?.filename ?? ''), '-C', join(modules, 'estate'), '--strip-components=1']);
    // The dependencies, linked from this checkout (what `npm install` would have put there).
    for (const name of readdirSync(join(REPO_ROOT, 'node_modules'))) {
      if (name === 'estate' || name.startsWith('.')) continue;
      symlinkSync(join(REPO_ROOT, 'node_modules', name), join(modules, name));
    }
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', type: 'module', private: true }));
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, outDir: 'out', types: ['node'], skipLibCheck: true }, files: ['handler.ts', 'agent.ts'] }));
    writeFileSync(join(dir, 'handler.ts'), HANDLER);
    writeFileSync(join(dir, 'agent.ts'), AGENT);
    writeFileSync(join(dir, 'bad.ts'), BAD);
    writeFileSync(join(dir, 'echo.json'), JSON.stringify(DEFINITION));
    estateBin = join(modules, 'estate', 'bin', 'estate.js');
  }, 240_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('ships declarations for estate, estate/client and estate/changes, and a wrongly typed handler does not type-check', () => {
    execFileSync(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8' });
    let bad = '';
    try {
      execFileSync(process.execPath, [TSC, '--noEmit', '--strict', '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022', '--skipLibCheck', 'bad.ts'], { cwd: dir, encoding: 'utf8' });
    } catch (e) {
      bad = String((e as { stdout?: string }).stdout);
    }
    expect(bad).toMatch(/bad\.ts.*error TS2322/s);
  }, 120_000);

  it('the packaged estate publishes and serves the compiled handler module, and the agent lists and calls through the cache', async () => {
    const store = `sqlite:${join(dir, 'estate.db')}`;
    execFileSync(process.execPath, [estateBin, 'publish', 'echo.json', '--store', store], { cwd: dir, encoding: 'utf8' });
    const serve = spawn(process.execPath, [estateBin, 'serve', '--http', '--port', '0', '--store', store, '--handlers', 'out/handler.js'], {
      cwd: dir,
      env: { ...process.env, ESTATE_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let buf = '';
        serve.stderr.on('data', (c: Buffer) => {
          buf += c.toString('utf8');
          const m = /"url":"(http:[^"]+)"/.exec(buf);
          if (m?.[1]) resolve(m[1]);
        });
        serve.on('exit', (code) => reject(new Error(`estate serve exited (${String(code)}): ${buf}`)));
      });
      const out = await new Promise<string>((resolve, reject) => {
        const agent = spawn(process.execPath, ['out/agent.js', url], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        agent.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
        agent.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
        agent.on('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`agent exited ${String(code)}: ${stderr}`))));
      });
      expect(JSON.parse(out)).toEqual({
        tools: ['demo.echo'],
        content: [{ type: 'text', text: 'hello from demo.echo@1.0.0' }],
        version: '1.0.0',
        stats: { hits: 1, misses: 1 },
        firstTwice: [true, false],
      });
    } finally {
      serve.kill('SIGTERM');
    }
  }, 120_000);
});
