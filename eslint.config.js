import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX, createNodeResolver } from 'eslint-plugin-import-x';
import { layerRules } from './scripts/eslint-layers.js';

export default tseslint.config(
  { ignores: ['dist/**', 'dist.*/**', 'node_modules/**', '.estate/**', '.cache/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', performance: 'readonly', structuredClone: 'readonly', setImmediate: 'readonly', queueMicrotask: 'readonly', fetch: 'readonly', Response: 'readonly', Request: 'readonly', Headers: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-console': ['error', { allow: ['error', 'warn'] }],
    },
  },
  {
    // The CLI and the benchmarks print to stdout on purpose; nothing else may (on stdio, stdout IS the protocol).
    files: ['src/cli/**', 'bench/**', 'scripts/**', 'test/**', 'examples/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // The resolver the layer rules see imports through: it reads package.json `imports`, so `#domain/semver` and
    // '../domain/semver.ts' land on the same file and an alias cannot slip past a rule.
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'] })],
      // no-cycle follows imports into files it has not linted yet; it must be able to parse TypeScript to do so.
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
    },
  },
  ...layerRules,
  {
    // Every setting goes through src/config.ts (flags > environment > defaults, checked with zod): a setting read
    // anywhere else escapes the check, the docs and the tests of it.
    files: ['src/**/*.ts'],
    ignores: ['src/config.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'read settings in src/config.ts and hand the values in' }],
    },
  },
);
