/** Who this server says it is (initialize, server/discover, every 2026-07-28 result's `_meta`). */
export const SERVER_INFO = { name: 'estate', version: '0.1.0' } as const;
