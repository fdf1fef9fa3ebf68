/**
 * The write side: read the tool's stream, decide, append with the revision read; on a conflict re-read and re-decide
 * (never append against stale state). Every entry point — CLI, HTTP API, demo — goes through here.
 */
import { DomainError } from '#domain/errors';
import type { CatalogueEvent } from '#domain/events';
import { toolStream } from '#domain/events';
import { baselineOf, decideLifecycle, decidePublish, evolve, initialToolState, type PublishVerdict, type ToolState } from '#domain/guard';
import { canonicalHash } from '#domain/hash';
import type { Classified, ToolDefinition } from '#domain/types';
import { decodeCatalogueEvent } from './event-codec.ts';
import { ConcurrencyError, systemClock, type Clock, type EventStore } from './ports.ts';

export interface PublishOutcome extends PublishVerdict {
  /** Position of the appended event, when published. */
  position?: string;
}

export interface LifecycleOutcome {
  /** `unchanged`: the version already had the state asked for; nothing was appended. */
  result: 'deprecated' | 'retired' | 'unchanged';
  name: string;
  version: string;
  /** Position of the appended event (absent when unchanged). */
  position?: string;
}

export interface CommandHandlerOptions {
  store: EventStore;
  clock?: Clock;
  /** How many times a lost race is re-judged before giving up with a `conflict` error. */
  maxAttempts?: number;
}

/**
 * How a publish classifies the new definition against its baseline, when not in this thread: the publishing API passes
 * its definition checker's worker, so a costly classification is bounded by the schema budget and refused past it.
 */
export interface PublishOptions {
  classify?: (before: ToolDefinition, after: ToolDefinition) => Promise<Classified>;
}

export class CommandHandler {
  private readonly store: EventStore;
  private readonly clock: Clock;
  private readonly maxAttempts: number;

  constructor({ store, clock = systemClock, maxAttempts = 50 }: CommandHandlerOptions) {
    this.store = store;
    this.clock = clock;
    this.maxAttempts = maxAttempts;
  }

  /** Fold a tool's stream into the guard's state; returns the state and the revision read (-1: no stream). */
  async load(name: string): Promise<{ state: ToolState; revision: number }> {
    const events = await this.store.readStream(toolStream(name));
    let state = initialToolState(name);
    let revision = -1;
    for (const stored of events) {
      const e = decodeCatalogueEvent(stored);
      if (e) state = evolve(state, e);
      revision = stored.revision;
    }
    return { state, revision };
  }

  /** What the guard would say, without appending. */
  async check(definition: ToolDefinition, by: string, options: PublishOptions = {}): Promise<PublishVerdict> {
    const { state } = await this.load(definition.name);
    return decidePublish(this.publishCommand(definition, by), state, await this.classified(definition, state, options));
  }

  async publish(definition: ToolDefinition, by: string, options: PublishOptions = {}): Promise<PublishOutcome> {
    const command = this.publishCommand(definition, by);
    return this.retrying(definition.name, async (state, revision) => {
      // Classified against THIS state's baseline: a lost race re-reads the state and classifies again.
      const verdict = decidePublish(command, state, await this.classified(definition, state, options));
      if (verdict.result !== 'published') return verdict;
      const { positions } = await this.append(definition.name, verdict.events, revision);
      return { ...verdict, position: positions[0] as string };
    });
  }

  async deprecate(name: string, version: string, reason: string, by: string): Promise<LifecycleOutcome> {
    return this.lifecycle('Deprecate', name, version, reason, by);
  }

  async retire(name: string, version: string, reason: string, by: string): Promise<LifecycleOutcome> {
    return this.lifecycle('Retire', name, version, reason, by);
  }

  private lifecycle(type: 'Deprecate' | 'Retire', name: string, version: string, reason: string, by: string): Promise<LifecycleOutcome> {
    return this.retrying(name, async (state, revision) => {
      const events = decideLifecycle({ type, name, version, reason, by, at: this.clock.now() }, state);
      if (events.length === 0) return { result: 'unchanged' as const, name, version };
      const { positions } = await this.append(name, events, revision);
      return { result: type === 'Deprecate' ? 'deprecated' : 'retired', name, version, position: positions[0] as string };
    });
  }

  /** The classification options.classify makes, when one is needed: a new version of a tool with a baseline. */
  private async classified(definition: ToolDefinition, state: ToolState, options: PublishOptions): Promise<Classified | undefined> {
    const base = baselineOf(state);
    if (options.classify === undefined || base === undefined || state.versions.has(definition.version)) return undefined;
    return options.classify(base.definition, definition);
  }

  private publishCommand(definition: ToolDefinition, by: string) {
    return {
      type: 'Publish' as const,
      definition,
      definitionHash: canonicalHash(definition),
      schemaHash: canonicalHash(definition.inputSchema),
      by,
      at: this.clock.now(),
    };
  }

  private append(name: string, events: CatalogueEvent[], revision: number) {
    return this.store.append(
      toolStream(name),
      events.map((e) => ({ type: e.type, data: e.data })),
      { expectedRevision: revision < 0 ? 'no_stream' : revision },
    );
  }

  /** Load, run, and on a ConcurrencyError load again and re-run: the loser is re-judged against the winner's state. */
  private async retrying<T>(name: string, run: (state: ToolState, revision: number) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const { state, revision } = await this.load(name);
      try {
        return await run(state, revision);
      } catch (e) {
        if (!(e instanceof ConcurrencyError)) throw e;
        if (attempt >= this.maxAttempts) {
          throw new DomainError('conflict', 'conflict', `conflict: ${name} kept changing under ${attempt} attempts; try again`);
        }
        // Jittered backoff so racing processes do not re-collide in lock step.
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(100, 5 * attempt)));
      }
    }
  }
}
