/** Host and Origin checks (DNS rebinding) and the JSON content type, before any MCP code sees a request. */
import { describe, expect, it } from 'vitest';
import { hostAllowed, hostnameOf, isJsonContentType, LOOPBACK_NAMES, originAllowed } from '../../src/mcp/http-guards.ts';

describe('HTTP guards', () => {
  it('compares Host by name, port-agnostic, IPv6 in brackets', () => {
    expect(hostnameOf('127.0.0.1:8080')).toBe('127.0.0.1');
    expect(hostnameOf('[::1]:8080')).toBe('[::1]');
    expect(hostnameOf('LocalHost')).toBe('localhost');
    expect(hostAllowed('localhost:1234', LOOPBACK_NAMES)).toBe(true);
    expect(hostAllowed('[::1]', LOOPBACK_NAMES)).toBe(true);
    expect(hostAllowed('evil.example', LOOPBACK_NAMES)).toBe(false);
    expect(hostAllowed('localhost.evil.example', LOOPBACK_NAMES)).toBe(false);
    expect(hostAllowed(undefined, LOOPBACK_NAMES)).toBe(false);
  });

  it('lets a request without Origin through; a present Origin must parse and be listed', () => {
    expect(originAllowed(undefined, LOOPBACK_NAMES)).toBe(true);
    expect(originAllowed('http://localhost:3000', LOOPBACK_NAMES)).toBe(true);
    expect(originAllowed('http://[::1]:3000', LOOPBACK_NAMES)).toBe(true);
    expect(originAllowed('https://evil.example', LOOPBACK_NAMES)).toBe(false);
    expect(originAllowed('null', LOOPBACK_NAMES)).toBe(false);
  });

  it('accepts application/json with parameters only', () => {
    expect(isJsonContentType('application/json')).toBe(true);
    expect(isJsonContentType('Application/JSON; charset=utf-8')).toBe(true);
    expect(isJsonContentType('text/plain')).toBe(false);
    expect(isJsonContentType('application/json-seq')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });
});
