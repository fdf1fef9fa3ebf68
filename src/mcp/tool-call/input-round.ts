/**
 * Step 2b of tools/call, stateless 2026-07-28 calls only: how the executor's questions to the client are answered.
 * A question whose answer is known (the verified requestState, this request's inputResponses) is answered; an
 * unanswered one ends the run, and the call answers an InputRequiredResult that the client's follow-up runs AGAIN
 * from the start (input-required.ts). That is only sound where running again is (executor.ts `mayRunAgain`): for a
 * proxied non_idempotent tool the call has already reached the upstream, and a second run would send it twice. Such
 * a call gets no rounds: its questions are refused at once (the upstream decides what a refusal means, as for a
 * client that declared no capability) and the call ends with its one execution.
 */
import { canonicalHash } from '#domain/hash';
import type { CatalogueVersion } from '#projections/catalogue';
import type { HandlerContext } from '#handlers/types';
import { ClientRequestError, ELICIT_METHOD, ROOTS_METHOD, SAMPLE_METHOD, type ClientMethod } from '../client-requests.ts';
import { InputRound, openState, type CallIdentity } from '../input-required.ts';
import type { CallParams } from './read-request.ts';
import { mayRunAgain, type ToolExecutor } from './executor.ts';

type Askers = Pick<HandlerContext, 'elicit' | 'sample' | 'listRoots'>;

export type InputRounds =
  /** Questions answered from the state and the responses; unanswered ones end the run (an InputRequiredResult). */
  | { kind: 'rounds'; round: InputRound; identity: CallIdentity }
  /** A call that must not run twice: every question is refused, nothing is carried to another request. */
  | { kind: 'once'; askers: Askers };

const refuse = (method: ClientMethod): Promise<never> =>
  Promise.reject(
    new ClientRequestError(
      'unavailable',
      `${method} cannot be answered on this 2026-07-28 call: an answer would mean sending the call to the upstream again, and a non_idempotent call is never sent twice`,
    ),
  );

const refusingAskers: Askers = {
  elicit: () => refuse(ELICIT_METHOD),
  sample: () => refuse(SAMPLE_METHOD),
  listRoots: () => refuse(ROOTS_METHOD),
};

export const openInputRounds = (p: CallParams, v: CatalogueVersion, executor: ToolExecutor, stateKey: Buffer | undefined): InputRounds | undefined => {
  if (!p.input) return undefined;
  if (!mayRunAgain(executor, v.sideEffect)) return { kind: 'once', askers: refusingAskers };
  const identity: CallIdentity = { tool: v.name, version: v.version, argsHash: canonicalHash(p.received) };
  // Answers from the state win over a re-sent one: the run that follows must see what the earlier runs saw.
  const answers = { ...p.input.responses, ...(p.input.state !== undefined ? openState(p.input.state, identity, stateKey) : {}) };
  return { kind: 'rounds', round: new InputRound(answers, p.input.capabilities), identity };
};
