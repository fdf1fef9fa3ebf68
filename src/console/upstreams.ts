/**
 * What the console needs from the upstream room (src/upstream/, SPEC §7), as a narrow port: until that room is merged
 * the console is given `noUpstreams`, and the page says that none are registered.
 */
export interface UpstreamDrift {
  /** The mirrored tool the upstream changed. */
  tool: string;
  /** Unified text diff of the pinned definition against what the upstream now offers. */
  diff: string;
  detectedAt: string;
}

export interface UpstreamSummary {
  /** The namespace the upstream is mirrored under (`upstream:<ns>/<tool>` handlers). */
  namespace: string;
  url: string;
  status: 'up' | 'down' | 'unknown';
  /** Drift waiting for an operator's approve or reject. */
  pending: UpstreamDrift[];
}

export interface UpstreamConsoleSource {
  list(): Promise<UpstreamSummary[]>;
  approve(namespace: string, tool: string, by: string): Promise<void>;
  reject(namespace: string, tool: string, reason: string, by: string): Promise<void>;
}

export const noUpstreams: UpstreamConsoleSource = {
  list: () => Promise.resolve([]),
  approve: () => Promise.reject(new Error('no upstream is registered')),
  reject: () => Promise.reject(new Error('no upstream is registered')),
};
