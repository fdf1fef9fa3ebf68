// The package `imports` aliases (`#domain/semver` -> `./src/domain/semver.ts`) as the build writes them into dist/:
// relative `.js` paths, so the built tree and the published package need no alias at all. Used by scripts/build.mjs.
import { dirname, join, relative, sep } from 'node:path';

/** The source file an alias names, per package.json `imports` (`./src/domain/semver.ts`). */
export function aliasTarget(imports, spec) {
  for (const [key, target] of Object.entries(imports)) {
    if (key.endsWith('/*') && spec.startsWith(key.slice(0, -1))) return target.replace('*', spec.slice(key.length - 1));
    if (key === spec) return target;
  }
  throw new Error(`no package import matches ${spec}`);
}

/** `text` of the emitted `file` (a path under `outDir`, default `dist`) with every alias specifier made a relative `.js` path. */
export function rewriteAliases(imports, file, text, outDir = 'dist') {
  return text.replace(/(from\s+|import\s+|import\()(['"])(#[^'"]+)\2/g, (_, lead, q, spec) => {
    const built = join(outDir, aliasTarget(imports, spec)).replace(/\.ts$/, '.js');
    const rel = relative(dirname(file), built).split(sep).join('/');
    return `${lead}${q}${rel.startsWith('.') ? rel : `./${rel}`}${q}`;
  });
}
