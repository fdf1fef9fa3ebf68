/**
 * Who this server says it is (initialize, server/discover, every 2026-07-28 result's `_meta`), and `estate --version`.
 * The version is package.json's (test/unit/first-run.test.ts holds them together).
 */
export const SERVER_INFO = { name: 'estate', version: '0.1.0' } as const;
