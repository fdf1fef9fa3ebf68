/**
 * Strict semver: MAJOR.MINOR.PATCH only, no pre-release or build metadata, no leading zeros.
 * Ordering goes through the `semver` library; the strict grammar is Estate's own rule.
 */
import semver from 'semver';

const STRICT = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;

export interface Version {
  major: number;
  minor: number;
  patch: number;
  text: string;
}

export const isStrictSemver = (text: string): boolean => STRICT.test(text) && semver.valid(text) === text;

export const parseVersion = (text: string): Version | null => {
  const m = STRICT.exec(text);
  if (!m || semver.valid(text) !== text) return null;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), text };
};

export const compareVersions = (a: string, b: string): number => semver.compare(a, b);
