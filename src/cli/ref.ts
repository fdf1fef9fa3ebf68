/** Parsing the references verbs take: `<name>@<version>` for catalogue versions, `<ns>.<tool>` for upstream tools. */
import { DomainError } from '#domain/errors';
import { isStrictSemver } from '#domain/semver';

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
  // 'payments.lookup@1.0' names no version there could be: a usage error, not "unknown version" (exit 4).
  if (!isStrictSemver(version)) {
    throw new DomainError('usage', 'bad-ref', `'${ref.slice(0, 160)}': the version must be strict semver MAJOR.MINOR.PATCH, e.g. payments.lookup@1.0.0`);
  }
  return { name, version };
}

/** A tool's name where a verb takes no version (`history`): `name@version` there is a usage error that says so. */
export const parseToolName = (arg: string, verb: string): string => {
  if (arg.includes('@')) throw new DomainError('usage', 'bad-name', `${verb} takes a tool's name (e.g. ${verb} payments.lookup), not '${arg.slice(0, 160)}'`);
  return arg;
};

/** `<ns>.<tool>` → the namespace and the full tool name. */
export const parseToolRef = (ref: string): { ns: string; tool: string } => {
  const dot = ref.indexOf('.');
  if (dot <= 0 || dot === ref.length - 1) throw new DomainError('usage', 'bad-ref', `'${ref.slice(0, 80)}': expected <ns>.<tool>, e.g. everything.echo`);
  return { ns: ref.slice(0, dot), tool: ref };
};
