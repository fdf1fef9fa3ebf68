/**
 * The conformance fixture pack on its own: every published fixture binds a handler, each handler returns what the
 * suite's scenario checks for, and the trigger fixture really changes the catalogue of a real SQLite store.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createSchemaCompiler } from '#domain/schema-compiler';
import { parseDefinitionText, validateDefinition } from '#domain/tool-definition';
import type { CallToolResult, HandlerContext } from '#handlers/types';
import { makeTempStore, runCli } from '../e2e/helpers.ts';
import { handlers, wavBase64 } from './handlers.ts';

const TOOLS_DIR = fileURLToPath(new URL('./tools/', import.meta.url));
const definitionFiles = readdirSync(TOOLS_DIR).filter((f) => f.endsWith('.yaml'));
const definitions = definitionFiles.map((f) => parse(readFileSync(join(TOOLS_DIR, f), 'utf8')) as { name: string; handler: string });

const ctx = (signal: AbortSignal = new AbortController().signal): HandlerContext & { logged: string[]; progressed: number[] } => {
  const logged: string[] = [];
  const progressed: number[] = [];
  const log = (msg: string) => void logged.push(msg);
  return {
    principal: { tenant: 'default', scopes: [], clearance: 'public' } as unknown as HandlerContext['principal'],
    runId: 'run-test',
    tool: { name: 't', version: '1.0.0', schemaHash: 'h' },
    signal,
    log: { debug: log, info: log, warn: log, error: log },
    progress: (p: number) => void progressed.push(p),
    logged,
    progressed,
  };
};

const call = async (name: string, args: Record<string, unknown> = {}, c = ctx()): Promise<CallToolResult> => {
  const h = handlers[name];
  if (!h) throw new Error(`no handler ${name}`);
  return h(args, c);
};

describe('conformance fixture definitions', () => {
  it('name the tools the suites call, each bound to a handler of the same name in the pack', () => {
    const names = definitions.map((d) => d.name).sort();
    for (const required of ['test_simple_text', 'test_image_content', 'test_audio_content', 'test_embedded_resource', 'test_multiple_content_types', 'test_error_handling', 'json_schema_2020_12_tool']) {
      expect(names).toContain(required);
    }
    for (const d of definitions) {
      expect(d.handler).toBe(d.name);
      expect(typeof handlers[d.handler]).toBe('function');
    }
  });

  it("pass Estate's own definition rules (the parser and schema compiler `estate publish` uses)", () => {
    const compiler = createSchemaCompiler();
    for (const f of definitionFiles) {
      const raw = parseDefinitionText(readFileSync(join(TOOLS_DIR, f), 'utf8'), f);
      expect(() => validateDefinition(raw, compiler), f).not.toThrow();
    }
  });
});

describe('conformance fixture handlers', () => {
  it('return the content shapes the suite checks', async () => {
    expect((await call('test_simple_text')).content).toEqual([{ type: 'text', text: 'This is a simple text response for testing.' }]);
    const image = (await call('test_image_content')).content[0];
    expect(image).toMatchObject({ type: 'image', mimeType: 'image/png' });
    expect(Buffer.from(String(image?.data), 'base64').subarray(1, 4).toString('ascii')).toBe('PNG');
    expect((await call('test_audio_content')).content[0]).toMatchObject({ type: 'audio', mimeType: 'audio/wav' });
    expect((await call('test_embedded_resource')).content[0]).toMatchObject({
      type: 'resource',
      resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' },
    });
    expect((await call('test_multiple_content_types')).content.map((c) => c.type)).toEqual(['text', 'image', 'resource']);
  });

  it('make a well-formed WAV (RIFF header sizes agree with the data)', () => {
    const b = Buffer.from(wavBase64(10), 'base64');
    expect(b.toString('ascii', 0, 4)).toBe('RIFF');
    expect(b.readUInt32LE(4)).toBe(b.length - 8);
    expect(b.toString('ascii', 36, 40)).toBe('data');
    expect(b.readUInt32LE(40)).toBe(10);
  });

  it('test_error_handling throws (Estate maps a throw to an isError result)', async () => {
    await expect(call('test_error_handling')).rejects.toThrow('This tool intentionally returns an error for testing');
  });

  it('test_tool_with_logging logs three messages in order', async () => {
    const c = ctx();
    await call('test_tool_with_logging', {}, c);
    expect(c.logged).toEqual(['Tool execution started', 'Tool processing data', 'Tool execution completed']);
  });

  it('test_tool_with_progress reports 0, 50 and 100 in order', async () => {
    const c = ctx();
    await call('test_tool_with_progress', {}, c);
    expect(c.progressed).toEqual([0, 50, 100]);
  });

  it('a slow fixture stops when its signal aborts', async () => {
    const ac = new AbortController();
    const pending = call('test_reconnection', {}, ctx(ac.signal));
    ac.abort(new Error('cancelled by test'));
    await expect(pending).rejects.toThrow('cancelled by test');
  });

  it('the sampling and elicitation fixtures ask what the suite checks and report the answer', async () => {
    const asked: { kind: string; params: Record<string, unknown> }[] = [];
    const c: ReturnType<typeof ctx> = {
      ...ctx(),
      elicit: async (params) => (asked.push({ kind: 'elicit', params }), { action: 'accept', content: { username: 'u' } }),
      sample: async (params) => (asked.push({ kind: 'sample', params }), { role: 'assistant', model: 'm', content: { type: 'text', text: 'answer' } }),
    };
    expect((await call('test_sampling', { prompt: 'p?' }, c)).content).toEqual([{ type: 'text', text: 'LLM response: answer' }]);
    expect(asked[0]).toEqual({ kind: 'sample', params: { messages: [{ role: 'user', content: { type: 'text', text: 'p?' } }], maxTokens: 100 } });
    expect((await call('test_elicitation', { message: 'm?' }, c)).content).toEqual([{ type: 'text', text: 'User response: action=accept, content={"username":"u"}' }]);
    expect(asked[1]?.params).toMatchObject({ message: 'm?', requestedSchema: { required: ['username', 'email'] } });
    await call('test_elicitation_sep1034_defaults', {}, c);
    expect(asked[2]?.params.requestedSchema).toMatchObject({
      properties: { name: { default: 'John Doe' }, age: { type: 'integer', default: 30 }, score: { default: 95.5 }, status: { default: 'active' }, verified: { default: true } },
    });
    await call('test_elicitation_sep1330_enums', {}, c);
    const props = (asked[3]?.params.requestedSchema as { properties: Record<string, Record<string, unknown>> }).properties;
    expect(Object.keys(props)).toEqual(['untitledSingle', 'titledSingle', 'legacyEnum', 'untitledMulti', 'titledMulti']);
  });

  it('a refused question becomes the fixture\'s own isError result', async () => {
    const c: ReturnType<typeof ctx> = { ...ctx(), elicit: () => Promise.reject(new Error('no elicitation capability')) };
    expect(await call('test_elicitation', { message: 'm' }, c)).toEqual({ content: [{ type: 'text', text: 'no elicitation capability' }], isError: true });
  });

  describe('test_trigger_tool_change', () => {
    const store = makeTempStore('estate-conf-trigger-');
    const saved = process.env.ESTATE_STORE;
    afterAll(() => {
      if (saved === undefined) delete process.env.ESTATE_STORE;
      else process.env.ESTATE_STORE = saved;
      store.cleanup();
    });

    it('publishes a new tool into the store the server reads', async () => {
      process.env.ESTATE_STORE = store.store;
      // A read-only verb never creates the store: before the first publish there is none (exit 2).
      const before = await runCli(['list', '--store', store.store, '--json']);
      expect(before.code, before.stderr).toBe(2);
      expect(before.stderr).toMatch(/no store at/);
      const result = await call('test_trigger_tool_change');
      const added = /Published (\S+)/.exec(String(result.content[0]?.text))?.[1];
      expect(added).toMatch(/^test_trigger_added\.t/);
      const after = await runCli(['list', '--store', store.store, '--json']);
      const names = (JSON.parse(after.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
      expect(names).toContain(added);
      expect(names).toHaveLength(1);
    }, 60_000);
  });
});
