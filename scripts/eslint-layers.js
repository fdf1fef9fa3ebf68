// The layer rules of the house (docs/architecture.md, "Layers and the rules that hold them"), enforced by `npm run lint`.
// Rules judge resolved files, not the text of a specifier, so a relative path and a `#alias` are held alike.

import { readdirSync } from 'node:fs';

// The rooms are read from src/, so a new room at the edge (src/http/, the next upstream or console folder) is an
// adapter to these rules from the day it appears, without anyone remembering to list it here.
const ROOMS = readdirSync(new URL('../src/', import.meta.url), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
/** The rooms that are not adapters: the pure core, the application layer, the package's exports, the root. */
const INNER = new Set(['domain', 'app', 'lib', 'compose']);
const ADAPTERS = ROOMS.filter((d) => !INNER.has(d)).map((d) => `./src/${d}`);
const ROOT = ['./src/compose'];
/** Where the composition root may not be imported: everywhere in src/ but the CLI (an entry point) and the root itself. */
const EVERY_SRC_ROOM = ROOMS.filter((d) => d !== 'cli' && d !== 'compose');

// I/O in all its forms, for the pure core: Node's own modules (with or without `node:`) and the packages that talk to
// the world. Ajv, semver, zod, yaml, re2 and hashing are pure libraries and stay allowed.
const NODE_BUILTINS = ['assert', 'async_hooks', 'buffer', 'child_process', 'cluster', 'crypto', 'dgram', 'dns', 'events', 'fs', 'fs/promises', 'http', 'http2', 'https', 'module', 'net', 'os', 'path', 'perf_hooks', 'process', 'readline', 'stream', 'timers', 'tls', 'url', 'util', 'v8', 'vm', 'worker_threads', 'zlib'];
const IO_PACKAGES = ['pg', 'kafkajs', 'better-sqlite3', 'pino', 'prom-client', 'commander', 'jose', 'testcontainers'];
const IO_SCOPES = ['@kurrent/*', '@modelcontextprotocol/*'];

const PURE_AND_APP_ZONES = [
  {
    target: './src/domain',
    from: ['./src/app', './projections', './src/lib', './src/config.ts', ...ADAPTERS, ...ROOT],
    message: 'domain/ is the pure core: it imports only domain/ (docs/architecture.md, layers).',
  },
  {
    target: './projections',
    from: ['./src/app', './src/lib', './src/config.ts', ...ADAPTERS, ...ROOT],
    message: 'projections/ are pure folds: they import only domain/ and projections/ (docs/architecture.md, layers).',
  },
  {
    target: './src/app',
    from: [...ADAPTERS, ...ROOT],
    message: 'app/ declares the ports and imports no adapter; adapters are handed in by the composition root.',
  },
];

// Entry points (src/cli/*, bin/, test/, bench/) may compose Estate; nothing inside the house may.
const ROOT_ZONE = {
  target: [...EVERY_SRC_ROOM.map((d) => `./src/${d}`), './projections', './src/config.ts'],
  from: ROOT,
  message: 'only entry points (src/cli/*, bin, tests, benches) import the composition root.',
};

export const layerRules = [
  {
    files: ['src/**/*.ts', 'projections/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      // An import the resolver cannot follow would be invisible to the rules below; packages are tsc's business.
      'import-x/no-unresolved': ['error', { ignore: ['^[^.#]'] }],
      'import-x/no-restricted-paths': ['error', {
        zones: [
          ...PURE_AND_APP_ZONES,
          ROOT_ZONE,
        ],
      }],
    },
  },
  {
    files: ['src/**/*.ts', 'projections/**/*.ts'],
    // No cycles between modules: a cycle makes load order matter and two files one idea.
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    // The pure core does no I/O: no Node modules, no I/O packages (the adapters are held by no-restricted-paths).
    files: ['src/domain/**', 'projections/**'],
    rules: {
      'no-restricted-imports': ['error', {
        // Exact names go in `paths`: a `patterns` entry such as `events` would also match '#domain/events'.
        paths: [...NODE_BUILTINS, ...IO_PACKAGES].map((name) => ({ name, message: 'domain/ and projections/ do no I/O: no Node module or I/O package.' })),
        patterns: [
          { group: ['node:*'], message: 'domain/ and projections/ do no I/O: time, ids and data come in as arguments.' },
          { group: IO_SCOPES, message: 'domain/ and projections/ do no I/O: no I/O package.' },
        ],
      }],
    },
  },
];
