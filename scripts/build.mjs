// Compile src/ and projections/ to dist/ and stamp the build, so bin/estate.js can tell a fresh build from a stale one.
//
// The build is made in a staging folder and swapped in whole: a process that starts from dist/ while a build runs (a
// test's server while another test runs `npm pack`, whose `prepare` is this build) must never see a half-written
// dist/. Between the two renames dist/ is briefly absent; bin/estate.js then runs the sources through tsx.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { rewriteAliases } from './alias-paths.mjs';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const staging = `dist.building-${process.pid}`;
rmSync(staging, { recursive: true, force: true });
const started = Date.now();
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', staging], { stdio: 'inherit' });

// The package `imports` aliases point at the TypeScript sources, so tsc, vitest, tsx and eslint all read the same
// files. tsc copies such specifiers into dist/ untouched (rewriteRelativeImportExtensions covers only relative ones),
// where they would send compiled code back to .ts sources that plain Node 20 cannot run: alias-paths.mjs rewrites them.
const imports = JSON.parse(readFileSync('package.json', 'utf8')).imports ?? {};

for (const entry of readdirSync(staging, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !/\.(d\.ts|js)$/.test(entry.name)) continue;
  const file = join(entry.parentPath, entry.name);
  const text = readFileSync(file, 'utf8');
  let fixed = rewriteAliases(imports, file, text, staging);
  // tsc keeps `.ts` in the relative imports of the declarations it emits (rewriteRelativeImportExtensions covers only
  // .js output); a package consumer resolves declarations beside .js files, so point them at `.js` as the code does.
  if (entry.name.endsWith('.d.ts')) fixed = fixed.replace(/(from\s+|import\()(['"])(\.{1,2}\/[^'"]+)\.ts\2/g, '$1$2$3.js$2');
  if (fixed !== text) writeFileSync(file, fixed);
}
writeFileSync(join(staging, '.built'), `${new Date().toISOString()}\n`);
const retired = `dist.retired-${process.pid}`;
if (existsSync('dist')) renameSync('dist', retired);
renameSync(staging, 'dist');
rmSync(retired, { recursive: true, force: true });
process.stderr.write(`build: dist/ compiled in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
