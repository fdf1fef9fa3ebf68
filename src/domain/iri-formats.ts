/**
 * The 2020-12 formats ajv-formats lacks: `iri`, `iri-reference` (RFC 3987) and `idn-email` (RFC 6531). Each maps the
 * internationalised string to the ASCII form it stands for and asks ajv-formats' own check of that form (RFC 3987
 * §3.1: an IRI is a URI once its non-ASCII characters are percent-encoded; an internationalised address has the shape
 * of an ASCII one where letters may be any Unicode letters). No new regular expression runs on the input beyond
 * ajv-formats' own and the one-character class below, so the linear-time guarantees are theirs.
 * `idn-hostname` stays unknown (refused at publish): IDNA 2008's contextual rules are not a mapping.
 */
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { Format } from 'ajv';
import addFormatsPlugin from 'ajv-formats';

/** RFC 3987 `ucschar` (BMP part) and any astral code point (a surrogate pair). */
const UCSCHAR = /[\u00A0-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF]|[\uD800-\uDBFF][\uDC00-\uDFFF]/g;

const check = (format: Format | undefined): ((s: string) => boolean) => {
  if (format instanceof RegExp) return (s) => format.test(s);
  if (typeof format === 'function') return format as (s: string) => boolean;
  if (typeof format === 'object' && format !== null && 'validate' in format) {
    const v = format.validate;
    if (v instanceof RegExp) return (s) => v.test(s);
    if (typeof v === 'function') return v as (s: string) => boolean;
  }
  throw new Error('ajv-formats: format not found');
};

export function addIriFormats(ajv: Ajv2020): void {
  const full = addFormatsPlugin.default.get('uri', 'full') as Format;
  const uri = check(full);
  const uriReference = check(addFormatsPlugin.default.get('uri-reference', 'full') as Format);
  const email = check(addFormatsPlugin.default.get('email', 'full') as Format);
  const percentEncoded = (s: string): string => s.replace(UCSCHAR, (c) => encodeURIComponent(c));
  ajv.addFormat('iri', { type: 'string', validate: (s: string) => uri(percentEncoded(s)) });
  ajv.addFormat('iri-reference', { type: 'string', validate: (s: string) => uriReference(percentEncoded(s)) });
  ajv.addFormat('idn-email', { type: 'string', validate: (s: string) => email(s.replace(UCSCHAR, 'a')) });
}
