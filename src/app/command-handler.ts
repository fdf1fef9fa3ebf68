/**
 * The write side: read the tool's stream, decide, append with the revision read; on a conflict re-read and re-decide
 * (never append against stale state). Every entry point — CLI, HTTP API, demo — goes through here.
 *
 * The read can be skipped: a state this handler read or wrote itself (a small cache), or, for a tool the process's
 * catalogue does not know (`useReadModel`), the empty state. Either is a guess that only the append confirms (it checks
 * the revision the guess was at): a guess that lost a race conflicts and is re-judged after a real read, and a verdict
 * that appends nothing (refused, unchanged, an error) is never given from a guess: it is decided again on a real read.
 */
import { DomainError } from '#domain/errors';
import type { CatalogueEvent } from '#domain/events';
import { toolStream } from '#domain/events';
import { baselineOf, decideLifecycle, decidePublish, evolve, initialToolState, type PublishVerdict, type ToolState } from '#domain/guard';
import type { Classified, ToolDefinition } from '#domain/types';
import { canonicalHashNative } from './native-hash.ts';
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
  /** Tool states kept after a read or an append, to decide the next command on that tool without reading. */
  stateCache?: number;
}

/** Default size of the state cache: the tools a publisher is working on, not the catalogue. */
export const DEFAULT_STATE_CACHE = 256;

/** A state to decide on and the stream revision it is at (-1: no stream). */
interface Loaded {
  state: ToolState;
  revision: number;
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
  private readonly states = new Map<string, { state: ToolState; revision: number }>();
  private readonly stateCache: number;
  private knowsTool: ((name: string) => boolean) | undefined;

  constructor({ store, clock = systemClock, maxAttempts = 50, stateCache = DEFAULT_STATE_CACHE }: CommandHandlerOptions) {
    this.store = store;
    this.clock = clock;
    this.maxAttempts = maxAttempts;
    this.stateCache = stateCache;
  }

  /**
   * Let the process's read model say which tools exist: a publish of a tool it does not know is decided on the empty
   * state and appended expecting no stream, without reading first. A read model that is behind costs a conflict and a
   * re-read, never a wrong verdict.
   */
  useReadModel(knowsTool: (name: string) => boolean): void {
    this.knowsTool = knowsTool;
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
    return this.retrying(definition.name, async ({ state, revision }) => {
      // Classified against THIS state's baseline: a lost race re-reads the state and classifies again.
      const verdict = decidePublish(command, state, await this.classified(definition, state, options));
      if (verdict.result !== 'published') return new Unconfirmed(verdict);
      const { positions } = await this.append(definition.name, verdict.events, state, revision);
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
    return this.retrying(name, async ({ state, revision }) => {
      const events = decideLifecycle({ type, name, version, reason, by, at: this.clock.now() }, state);
      if (events.length === 0) return new Unconfirmed<LifecycleOutcome>({ result: 'unchanged', name, version });
      const { positions } = await this.append(name, events, state, revision);
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
      // Native sha256: the same hashes as the domain's canonicalHash, for a fraction of a publish's time.
      definitionHash: canonicalHashNative(definition),
      schemaHash: canonicalHashNative(definition.inputSchema),
      by,
      at: this.clock.now(),
    };
  }

  /** Append what was decided on `state` at `revision`; the state after it is remembered for the next command. */
  private async append(name: string, events: CatalogueEvent[], state: ToolState, revision: number) {
    const result = await this.store.append(
      toolStream(name),
      events.map((e) => ({ type: e.type, data: e.data })),
      { expectedRevision: revision < 0 ? 'no_stream' : revision },
    );
    // A copy: the events hold the caller's definition object, which the caller may change after this returns.
    this.remember(name, structuredClone(events).reduce(evolve, state), revision + events.length);
    return result;
  }

  private remember(name: string, state: ToolState, revision: number): void {
    if (this.stateCache <= 0) return;
    const held = this.states.get(name);
    if (held && held.revision > revision) return; // a concurrent command of this process already wrote past it
    this.states.delete(name);
    this.states.set(name, { state, revision });
    if (this.states.size > this.stateCache) this.states.delete(this.states.keys().next().value as string);
  }

  /** The state to decide on without reading, if there is one to guess: this handler's own, or none for a new tool. */
  private guess(name: string): Loaded | undefined {
    const held = this.states.get(name);
    if (held) return held;
    if (this.knowsTool && !this.knowsTool(name)) return { state: initialToolState(name), revision: -1 };
    return undefined;
  }

  private async read(name: string): Promise<Loaded> {
    const loaded = await this.load(name);
    this.remember(name, loaded.state, loaded.revision);
    return loaded;
  }

  /**
   * Decide and run on a guessed state, if there is one; then (or instead) on a read one, and on a ConcurrencyError read
   * again and re-run: the loser is re-judged against the winner's state. An outcome that appended nothing comes back
   * wrapped in `Unconfirmed`: from a read state it is the answer; from a guess it is decided again on a read, and so is
   * whatever a guess threw (a conflict, a refusal, an error).
   */
  private async retrying<T>(name: string, run: (loaded: Loaded) => Promise<T | Unconfirmed<T>>): Promise<T> {
    const guessed = this.guess(name);
    if (guessed) {
      try {
        const out = await run(guessed);
        if (!(out instanceof Unconfirmed)) return out;
      } catch {
        // Decided again below, on what the store holds: that answer (or error) is the one to give.
      }
      this.states.delete(name);
    }
    for (let attempt = 1; ; attempt++) {
      const loaded = await this.read(name);
      try {
        const out = await run(loaded);
        return out instanceof Unconfirmed ? out.value : out;
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

/** An outcome that appended nothing, so nothing confirmed the state it was decided on. */
class Unconfirmed<T> {
  constructor(readonly value: T) {}
}
