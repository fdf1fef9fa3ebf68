/** Parsing the references verbs take: `<name>@<version>` for catalogue versions, `<ns>.<tool>` for upstream tools. */
import { DomainError } from '#domain/errors';

const badRef = (ref: string): DomainError => new DomainError('usage', 'bad-ref', `'${ref}': expected <name>@<version>, e.g. payments.lookup@1.0.0`);

/** `name@version`; the version may be left out where `needVersion` is false (show: the latest active one). */
export function parseRef(ref: string, needVersion: true): { name: string; version: string };
export function parseRef(ref: string, needVersion: boolean): { name: string; version?: string };
export function parseRef(ref: string, needVersion: boolean): { name: string; version?: string } {
  const at = ref.lastIndexOf('@');
  if (at < 0) {
    if (needVersion) throw badRef(ref);
    return { name: ref };
  }
  const name = ref.slice(0, at);
  const version = ref.slice(at + 1);
  if (!name || !version) throw badRef(ref);
  return { name, version };
}

/** `<ns>.<tool>` → the namespace and the full tool name. */
export const parseToolRef = (ref: string): { ns: string; tool: string } => {
  const dot = ref.indexOf('.');
  if (dot <= 0 || dot === ref.length - 1) throw new DomainError('usage', 'bad-ref', `'${ref.slice(0, 80)}': expected <ns>.<tool>, e.g. everything.echo`);
  return { ns: ref.slice(0, dot), tool: ref };
};
