/**
 * `handlerOutsideNamespace` is asked of every version of the catalogue when a server starts (which versions it serves)
 * and of every version a discovery view considers, so it compares in place instead of splitting names. Property: it
 * answers exactly what the rule says, a handler's namespace (`handlerNamespace`) equal to the tool's first segment.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handlerNamespace, handlerOutsideNamespace } from '#domain/tool-definition';

const part = fc.stringMatching(/^[ab./:]{0,6}$/);

describe('handlerOutsideNamespace', () => {
  it('property: null exactly when the handler\'s namespace is the tool\'s first name segment', () => {
    fc.assert(
      fc.property(part, fc.oneof(part, part.map((s) => `upstream:${s}`)), (name, handler) => {
        expect(handlerOutsideNamespace(name, handler) === null).toBe(handlerNamespace(handler) === name.split('.')[0]);
      }),
      { numRuns: 5000 },
    );
  });

  it('examples', () => {
    expect(handlerOutsideNamespace('payments.lookup', 'payments.lookup')).toBeNull();
    expect(handlerOutsideNamespace('payments.lookup', 'upstream:payments/lookup')).toBeNull();
    expect(handlerOutsideNamespace('payments', 'payments')).toBeNull();
    expect(handlerOutsideNamespace('payments.lookup', 'pay.lookup')).toMatch(/^handler: 'pay.lookup' is not in the tool's namespace 'payments'/);
    expect(handlerOutsideNamespace('payments.lookup', 'paymentsx.lookup')).not.toBeNull();
    expect(handlerOutsideNamespace('payments.lookup', 'upstream:payments')).not.toBeNull();
    expect(handlerOutsideNamespace('.lookup', '.lookup')).not.toBeNull();
  });
});
