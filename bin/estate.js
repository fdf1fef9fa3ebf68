#!/usr/bin/env node
// The `estate` command. It runs the compiled build in dist/ when that build is at least as new as every source file
// (npm install/ci builds it through `prepare`), and the TypeScript sources through tsx otherwise, so an edit is never
// shadowed by a stale build.
import { existsSync, readdirSync, statSync } from 'node:fs';

const root = new URL('..', import.meta.url);
const stamp = new URL('dist/.built', root);

const newestSource = (dir) => {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = new URL(entry.name + (entry.isDirectory() ? '/' : ''), dir);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
};

const buildIsFresh = () => {
  if (process.env.ESTATE_FROM_SOURCE === '1' || !existsSync(stamp)) return false;
  const built = statSync(stamp).mtimeMs;
  return built >= newestSource(new URL('src/', root)) && built >= newestSource(new URL('projections/', root));
};

if (buildIsFresh()) {
  await import('../dist/src/cli/main.js');
} else {
  (await import('tsx/esm/api')).register();
  await import('../src/cli/main.ts');
}
