// Compile src/ and projections/ to dist/ and stamp the build, so bin/estate.js can tell a fresh build from a stale one.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync('dist', { recursive: true, force: true });
const started = Date.now();
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
// tsc keeps `.ts` in the relative imports of the declarations it emits (rewriteRelativeImportExtensions covers only
// .js output); a package consumer resolves declarations beside .js files, so point them at `.js` as the code does.
for (const entry of readdirSync('dist', { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
  const file = join(entry.parentPath, entry.name);
  const text = readFileSync(file, 'utf8');
  const fixed = text.replace(/(from\s+|import\()(['"])(\.{1,2}\/[^'"]+)\.ts\2/g, '$1$2$3.js$2');
  if (fixed !== text) writeFileSync(file, fixed);
}
writeFileSync('dist/.built', `${new Date().toISOString()}\n`);
process.stderr.write(`build: dist/ compiled in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
