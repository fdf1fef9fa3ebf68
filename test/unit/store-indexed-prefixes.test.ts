/**
 * The stores read two kinds of stream by an index of their own (src/store/sqlite-scan-page.ts, postgres-rows.ts), keyed
 * by the prefix as a literal: the catalogue's and the upstreams'. They must be the prefixes the domain writes, or the
 * reads silently fall back to passing over every call record.
 */
import { describe, expect, it } from 'vitest';
import { TOOL_STREAM_PREFIX, toolStream, upstreamStream } from '#domain/events';
import { INDEXED_PREFIXES as PG } from '#store/postgres-rows';
import { INDEXED_PREFIXES as SQLITE } from '#store/sqlite-scan-page';

describe('the stream kinds read by an index', () => {
  it('are the catalogue and upstream prefixes the domain writes, on both stores', () => {
    const prefixes = [TOOL_STREAM_PREFIX, upstreamStream('')].sort();
    expect(toolStream('a.b').startsWith(TOOL_STREAM_PREFIX)).toBe(true);
    expect(Object.keys(SQLITE).sort()).toEqual(prefixes);
    expect(Object.keys(PG).sort()).toEqual(prefixes);
  });
});
