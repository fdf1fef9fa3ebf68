/** Attack tests for `estate upstream add`'s flags: no secret into an event, no clear text off loopback, fail closed. */
import { describe, expect, it } from 'vitest';
import { defaultAccessFromFlags, splitCommand, targetFromFlags } from '#upstream/target-flags';

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

  it('requires default access (fail closed)', () => {
    expect(() => defaultAccessFromFlags({})).toThrow(/default access is required/);
    expect(() => defaultAccessFromFlags({ clearance: 'internal' })).toThrow(/default access is required/);
    expect(() => defaultAccessFromFlags({ clearance: 'internal', scopes: ' , ' })).toThrow(/at least one scope/);
    expect(() => defaultAccessFromFlags({ clearance: 'secret', scopes: 'a' })).toThrow(/not one of/);
    expect(defaultAccessFromFlags({ clearance: 'internal', scopes: 'b,a,a', tenants: 'acme' })).toEqual({ requiredScopes: ['a', 'b'], tenants: ['acme'], classification: 'internal' });
  });
});
