/**
 * Step 4 of tools/call: a successful result is checked against the pinned outputSchema. A tool that declares one
 * must return structuredContent that matches it; otherwise the client gets an `isError` result and the call is
 * recorded `output_invalid` (the executor's own output never reaches a client unchecked).
 */
import type { CallOutcome } from '#domain/events';
import { formatErrors, type CompiledSchema, type ValidationError } from '#domain/validate';
import type { CallToolResult } from '#handlers/types';
import { errorResult } from '../error-map.ts';

export interface CheckedOutput {
  result: CallToolResult;
  outcome: CallOutcome;
}

export const checkOutput = (output: CompiledSchema | undefined, result: CallToolResult, outcome: CallOutcome): CheckedOutput => {
  if (outcome !== 'ok' || !output) return { result, outcome };
  const sc = result.structuredContent;
  const errors: ValidationError[] = sc === undefined ? [{ path: '$', message: 'structuredContent is required by the outputSchema' }] : output.validate(sc);
  if (errors.length === 0) return { result, outcome };
  return { result: errorResult(`Tool output does not match its outputSchema:\n${formatErrors(errors)}`), outcome: 'output_invalid' };
};
