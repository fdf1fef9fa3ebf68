/**
 * Step 2b of tools/call, stateless 2026-07-28 calls only: how the executor's questions to the client are answered.
 * A question whose answer is known (the verified requestState, this request's inputResponses) is answered; an
 * unanswered one ends the run, and the call answers an InputRequiredResult that the client's follow-up runs AGAIN
 * from the start (input-required.ts). That is only sound where running again is (executor.ts `mayRunAgain`): for a
 * proxied non_idempotent tool the call has already reached the upstream, and a second run would send it twice. Such
 * a call gets no rounds: its questions are refused at once (the upstream decides what a refusal means, as for a
 * client that declared no capability) and the call ends with its one execution.
 */
import type { Principal } from '#domain/types';
import type { CatalogueVersion } from '#projections/catalogue';
import type { HandlerContext } from '#handlers/types';
import { CAPABILITY_OF, ClientRequestError, ELICIT_METHOD, ROOTS_METHOD, SAMPLE_METHOD, type ClientMethod } from '../client-requests.ts';
import { InputRound, openState, type CallIdentity } from '../input-required.ts';
import type { CallParams } from './read-request.ts';
import { mayRunAgain, type ToolExecutor } from './executor.ts';

type Askers = Pick<HandlerContext, 'elicit' | 'sample' | 'listRoots'>;

export type InputRounds =
  /** Questions answered from the state and the responses; unanswered ones end the run (an InputRequiredResult). */
  | { kind: 'rounds'; round: InputRound; identity: CallIdentity }
  /** A call that must not run twice: every question is refused, nothing is carried to another request. */
  | { kind: 'once'; askers: Askers };

/**
 * A question the client never declared it could answer is the protocol's missing-capability refusal (-32021), as on
 * any other 2026-07-28 call; one it could answer is refused because answering would mean running the call again.
 */
const refuse = (method: ClientMethod, capabilities: Readonly<Record<string, unknown>>): Promise<never> => {
  const capability = CAPABILITY_OF[method];
  const declared = capabilities[capability];
  if (typeof declared !== 'object' || declared === null) {
    return Promise.reject(new ClientRequestError('capability', `${method} refused: the client did not declare the ${capability} capability`, undefined, capability));
  }
  return Promise.reject(
    new ClientRequestError(
      'unavailable',
      `${method} cannot be answered on this 2026-07-28 call: an answer would mean sending the call to the upstream again, and a non_idempotent call is never sent twice`,
    ),
  );
};

const refusingAskers = (capabilities: Readonly<Record<string, unknown>>): Askers => ({
  elicit: () => refuse(ELICIT_METHOD, capabilities),
  sample: () => refuse(SAMPLE_METHOD, capabilities),
  listRoots: () => refuse(ROOTS_METHOD, capabilities),
});

/** How requestStates are checked: fixed per server (the pipeline builds it once). */
export interface StateSettings {
  /** Absent: the per-process default key (input-required.ts). */
  key?: Buffer;
  ttlMs: number;
  /** The pipeline's clock. */
  now: () => number;
}

/**
 * `argsHash`: the canonical hash of the arguments as sent (the pipeline's, computed once per call). `principal`: the
 * caller, whom a requestState must have been issued to. A call without a state reads no clock and computes no MAC.
 */
export const openInputRounds = (
  p: CallParams,
  v: CatalogueVersion,
  executor: ToolExecutor,
  argsHash: string,
  principal: Principal,
  state: StateSettings,
): InputRounds | undefined => {
  if (!p.input) return undefined;
  if (!mayRunAgain(executor, v.sideEffect)) return { kind: 'once', askers: refusingAskers(p.input.capabilities) };
  const identity: CallIdentity = { tool: v.name, version: v.version, argsHash };
  const sent = p.input.state;
  if (sent === undefined) return { kind: 'rounds', round: new InputRound(p.input.responses, p.input.capabilities), identity };
  const opened = openState(sent, identity, { principal, now: state.now(), ttlMs: state.ttlMs, ...(state.key ? { key: state.key } : {}) });
  // Answers from the state win over a re-sent one: the run that follows must see what the earlier runs saw. Its first
  // issue time goes on into the next state: the TTL bounds the whole call, and no answer outlives it.
  const answers = { ...p.input.responses, ...opened.answers };
  return { kind: 'rounds', round: new InputRound(answers, p.input.capabilities, opened.firstIssuedAt), identity };
};
