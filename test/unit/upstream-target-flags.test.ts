/** Attack tests for `estate upstream add`'s flags: no secret into an event, no clear text off loopback, fail closed. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { urlOf } from '#upstream/connection';
import { describeTarget } from '#upstream/drift-text';
import { defaultAccessFromFlags, looksLikeCredential, splitCommand, targetFromFlags } from '#upstream/target-flags';

const refusalOf = (f: Parameters<typeof targetFromFlags>[0]): string => {
  try {
    targetFromFlags(f);
  } catch (e) {
    expect((e as { kind?: string }).kind).toBe('usage');
    return (e as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(f)}`);
};

describe('upstream add flags', () => {
  it('splits a command line with quotes and escapes', () => {
    expect(splitCommand(`node "my server.js" --root '/tmp/a b' x\\ y`)).toEqual(['node', 'my server.js', '--root', '/tmp/a b', 'x y']);
    expect(() => splitCommand('node "open')).toThrow(/unterminated/);
  });

  it('stores only the NAME of the variable holding a secret, and refuses a literal without echoing it', () => {
    expect(targetFromFlags({ command: 'node s.js', env: ['TOKEN=env:GH_TOKEN'] })).toEqual({ transport: 'stdio', command: 'node', args: ['s.js'], env: { TOKEN: 'GH_TOKEN' } });
    for (const env of ['TOKEN=ghp_secretvalue', 'TOKEN', 'TOKEN=env:', 'TOKEN=env:has space', 'BAD-NAME=env:X', '=env:X']) {
      let message = '';
      try {
        targetFromFlags({ command: 'node s.js', env: [env] });
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message, env).toMatch(/--env/);
      expect(message).not.toContain('ghp_secretvalue');
    }
    expect(() => targetFromFlags({ url: 'https://mcp.example.com/mcp', header: ['Authorization=Bearer ghp_x'] })).toThrow(/Authorization=env:VARIABLE/);
    expect(() => targetFromFlags({ url: 'https://mcp.example.com/mcp', header: ['Bad Header=env:X'] })).toThrow(/not a valid header name/);
    expect(() => targetFromFlags({ url: 'https://mcp.example.com/mcp', header: ['X\r\nInjected=env:X'] })).toThrow(/not a valid header name/);
    expect(() => targetFromFlags({ url: 'https://mcp.example.com/mcp', header: ['Mcp-Session-Id=env:X'] })).toThrow(/not configurable/);
    expect(targetFromFlags({ url: 'https://mcp.example.com/mcp', header: ['Authorization=env:GH'] })).toEqual({ transport: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'GH' } });
  });

  it('refuses clear text off loopback, other schemes, credentials in the URL, and mixed transports', () => {
    expect(() => targetFromFlags({ url: 'http://mcp.example.com/mcp' })).toThrow(/must be https/);
    expect(() => targetFromFlags({ url: 'ftp://127.0.0.1/x' })).toThrow(/must be https/);
    expect(() => targetFromFlags({ url: 'https://user:pw@mcp.example.com/mcp' })).toThrow(/credentials in the URL/);
    expect(() => targetFromFlags({ url: 'not a url' })).toThrow(/not a URL/);
    expect(() => targetFromFlags({ url: 'https://x.example/mcp', command: 'node' })).toThrow(/exactly one/);
    expect(() => targetFromFlags({})).toThrow(/exactly one/);
    expect(() => targetFromFlags({ url: 'https://x.example/mcp', env: ['A=env:B'] })).toThrow(/--env and --cwd are for --command/);
    expect(targetFromFlags({ url: 'http://127.0.0.1:3001/mcp' })).toMatchObject({ transport: 'http' });
  });

  it('refuses a query parameter named like a credential, without echoing its value, pointing at --query and --header', () => {
    for (const name of ['api_key', 'apikey', 'API-KEY', 'apiKey', 'key', 'token', 'access_token', 'accessToken', 'auth', 'Authorization', 'secret', 'client_secret', 'password', 'passwd', 'X-Amz-Signature', 'X-Amz-Credential', 'X-Amz-Security-Token', 'sig', 'signature', 'credential', 'session', 'sessionid', 'JSESSIONID', 'session_token', 'jwt']) {
      const message = refusalOf({ url: `https://example.com/mcp?page=2&${name}=SECRET123` });
      expect(message, name).toBe(`--url: query parameter '${name}' looks like a credential, and the URL would be stored; leave it out of --url and name the environment variable that holds it: --query '${name}=env:VARIABLE' (or send it as a header: --header '<Name>=env:VARIABLE'; a secret is never stored)`);
      expect(message).not.toContain('SECRET123');
    }
    // Percent-encoded, or without a value, it is the same name.
    expect(refusalOf({ url: 'https://example.com/mcp?api%5Fkey=SECRET123' })).toMatch(/'api_key' looks like a credential/);
    expect(refusalOf({ url: 'https://example.com/mcp?token' })).toMatch(/'token' looks like a credential/);
    // A URL that does not parse is not echoed past its query either.
    expect(refusalOf({ url: 'not a url?token=SECRET123' })).toBe("--url 'not a url?...': not a URL");
    // Words, not substrings: these are no credentials.
    for (const name of ['author', 'keyword', 'page', 'cursor', 'format', 'design', 'tokenizer', 'passive']) expect(looksLikeCredential(name), name).toBe(false);
    expect(targetFromFlags({ url: 'https://example.com/mcp?author=me&keyword=x&tokenizer=cl100k' })).toEqual({ transport: 'http', url: 'https://example.com/mcp?author=me&keyword=x&tokenizer=cl100k', headers: {} });
  });

  it('--query names an environment variable per query parameter: stored by name, added to the URL only when connecting', () => {
    const target = targetFromFlags({ url: 'https://mcp.example.com/mcp?region=eu', query: ['api_key=env:MCP_KEY', 'x.y~z-1=env:OTHER'] });
    expect(target).toEqual({ transport: 'http', url: 'https://mcp.example.com/mcp?region=eu', headers: {}, query: { api_key: 'MCP_KEY', 'x.y~z-1': 'OTHER' } });
    // Shown with the variable's name; connected to with its value, encoded.
    expect(describeTarget(target)).toBe('https://mcp.example.com/mcp?region=eu&api_key=env:MCP_KEY&x.y~z-1=env:OTHER');
    expect(describeTarget(targetFromFlags({ url: 'https://mcp.example.com/mcp', query: ['k=env:K'] }))).toBe('https://mcp.example.com/mcp?k=env:K');
    if (target.transport !== 'http') throw new Error('http');
    expect(urlOf('mx', target, { MCP_KEY: 's3 cr&t', OTHER: 'o' }).href).toBe('https://mcp.example.com/mcp?region=eu&api_key=s3+cr%26t&x.y%7Ez-1=o');
    expect(() => urlOf('mx', target, { OTHER: 'o' })).toThrow('upstream mx: environment variable MCP_KEY (for --query api_key) is not set');
    // No query: the URL as stored (and a target stored before --query existed reads the same).
    expect(urlOf('mx', { transport: 'http', url: 'https://mcp.example.com/mcp', headers: {} }, {}).href).toBe('https://mcp.example.com/mcp');
    expect(refusalOf({ url: 'https://mcp.example.com/mcp', query: ['api_key=SECRET123'] })).toBe('--query api_key: expected api_key=env:VARIABLE (a secret is never stored; name the environment variable that holds it)');
    expect(refusalOf({ url: 'https://mcp.example.com/mcp?k=1', query: ['k=env:K'] })).toBe('--query k: given twice (in --url or another --query)');
    expect(refusalOf({ url: 'https://mcp.example.com/mcp', query: ['k=env:K', 'k=env:L'] })).toBe('--query k: given twice (in --url or another --query)');
    expect(refusalOf({ url: 'https://mcp.example.com/mcp', query: ['a&b=env:K'] })).toBe("--query 'a&b': not a valid query parameter name");
    expect(refusalOf({ url: 'https://mcp.example.com/mcp', query: [`${'q'.repeat(129)}=env:K`] })).toMatch(/not a valid query parameter name/);
    expect(refusalOf({ command: 'node s.js', query: ['k=env:K'] })).toBe('upstream add: --header and --query are for --url upstreams; a stdio upstream takes --env');
  });

  it('refuses a --cwd that is not an existing directory, and stores the one given as an absolute path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'estate-cwd-'));
    try {
      const file = join(dir, 'file.txt');
      writeFileSync(file, 'x');
      expect(refusalOf({ command: 'node s.js', cwd: join(dir, 'nonexistent') })).toBe(`--cwd '${join(dir, 'nonexistent')}': no such directory`);
      expect(refusalOf({ command: 'node s.js', cwd: file })).toBe(`--cwd '${file}': not a directory`);
      expect(refusalOf({ command: 'node s.js', cwd: join(file, 'below') })).toBe(`--cwd '${join(file, 'below')}': no such directory`);
      expect(refusalOf({ command: 'node s.js', cwd: '' })).toBe('--cwd: empty');
      expect(targetFromFlags({ command: 'node s.js', cwd: dir })).toEqual({ transport: 'stdio', command: 'node', args: ['s.js'], cwd: dir, env: {} });
      expect(targetFromFlags({ command: 'node s.js', cwd: relative(process.cwd(), dir) })).toMatchObject({ cwd: dir });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('requires default access (fail closed)', () => {
    expect(() => defaultAccessFromFlags({})).toThrow(/default access is required/);
    expect(() => defaultAccessFromFlags({ clearance: 'internal' })).toThrow(/default access is required/);
    expect(() => defaultAccessFromFlags({ clearance: 'internal', scopes: ' , ' })).toThrow(/at least one scope/);
    expect(() => defaultAccessFromFlags({ clearance: 'secret', scopes: 'a' })).toThrow(/not one of/);
    expect(defaultAccessFromFlags({ clearance: 'internal', scopes: 'b,a,a', tenants: 'acme' })).toEqual({ requiredScopes: ['a', 'b'], tenants: ['acme'], classification: 'internal' });
  });
});
