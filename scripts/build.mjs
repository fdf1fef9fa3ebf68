// Compile src/ and projections/ to dist/ and stamp the build, so bin/estate.js can tell a fresh build from a stale one.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync('dist', { recursive: true, force: true });
const started = Date.now();
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
writeFileSync('dist/.built', `${new Date().toISOString()}\n`);
process.stderr.write(`build: dist/ compiled in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
