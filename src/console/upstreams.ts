/**
 * What the console needs from the upstream room (src/upstream/, SPEC §7), as a narrow port: the composition root
 * adapts the upstream registry (the very commands `estate upstream list|drift|approve|reject` run) and the serving
 * process's links (src/compose/console-upstreams.ts). The console room does not import the upstream room.
 */
import type { PublishOutcome } from '#app/command-handler';
import { DomainError } from '#domain/errors';
import type { Reason } from '#domain/types';

export interface UpstreamDriftView {
  /** The catalogue name the candidate would be published under (`<ns>.<t'>`). */
  tool: string;
  upstreamTool: string;
  level: 'initial' | 'major' | 'minor' | 'patch';
  reasons: Reason[];
  /** The version clients see today (absent for a tool never approved). */
  pinned?: string;
  /** Identifies the candidate shown: approve and reject apply to this one only. */
  candidateHash: string;
  at: string;
  /** Unified line diff of the text a model reads (title, description, annotations), when it changed. */
  textDiff?: string;
  /**
   * The upstream changed the tool again since this candidate, and this serving process's last sync left that change
   * for later (an upstream's changes are recorded at a bounded pace): when it is recorded.
   */
  newerWaiting?: string;
  /**
   * Read from the events, on every replica: the tool's changes in the window are all undecided, so a change the
   * upstream makes now is recorded no sooner than this (shown when this process has not seen a newer one itself).
   */
  nextRecordedAfter?: string;
}

/** An upstream tool the definition rules refused at this serving process's last sync: never offered, never recorded. */
export interface UpstreamRefusalView {
  upstreamTool: string;
  tool: string;
  code: string;
  message: string;
}

export interface UpstreamView {
  ns: string;
  transport: string;
  target: string;
  /** Tools with a published (pinned) version. */
  tools: number;
  /** The registration: active or removed. */
  status: string;
  /**
   * This serving process's connection: up, down (failing fast), probing, not connected yet, not served here, or none
   * (removed).
   */
  link: string;
  pending: UpstreamDriftView[];
  /** Refused at this process's last sync (at most REFUSALS_SHOWN, each cut); how many there were in all. */
  refused?: { shown: UpstreamRefusalView[]; total: number };
}

/** The most refused tools one upstream's section shows (an upstream may list 1,000); the rest are counted. */
export const REFUSALS_SHOWN = 50;

export interface UpstreamConsoleSource {
  list(): Promise<UpstreamView[]>;
  /** Publish the candidate through the publish guard (version: the pinned one bumped by its level). */
  approve(ns: string, tool: string, candidateHash: string, by: string): Promise<PublishOutcome>;
  reject(ns: string, tool: string, candidateHash: string, reason: string, by: string): Promise<{ ns: string; tool: string; candidateHash: string; position: string }>;
}

/** No upstream room (tests of the console alone): nothing is registered. */
const none = (ns: string) => Promise.reject(new DomainError('not-found', 'unknown-upstream', `unknown upstream '${ns}'`));
export const noUpstreams: UpstreamConsoleSource = { list: () => Promise.resolve([]), approve: none, reject: none };
