/**
 * The SDK's Streamable HTTP transport (2025 sessions; 2026-07-28 event streams), loaded on first use: ~110 ms of
 * modules that a server's start need not wait for. `estate serve --http` loads it right after its ready line; a request
 * that needs it before then waits for the load.
 */
type SdkNode = typeof import('@modelcontextprotocol/node');

let loaded: SdkNode | undefined;
let loading: Promise<SdkNode> | undefined;

export const loadSdkTransport = (): Promise<SdkNode> => {
  if (loaded) return Promise.resolve(loaded);
  loading ??= import('@modelcontextprotocol/node').then(
    (m) => (loaded = m),
    (e: unknown) => {
      loading = undefined;
      throw e;
    },
  );
  return loading;
};

/** The loaded module; only after `loadSdkTransport()` has resolved. */
export const sdkTransport = (): SdkNode => {
  if (!loaded) throw new Error('the SDK transport is used before it was loaded (await loadSdkTransport() first)');
  return loaded;
};
