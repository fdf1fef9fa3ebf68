import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.estate/**', '.cache/**', 'coverage/**'] },
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
    // The pure core does no I/O: no node:* modules, no adapters.
    files: ['src/domain/**', 'projections/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['node:*', '**/store/**', '**/bus/**', '**/mcp/**', '**/app/**', 'pg', 'kafkajs', 'better-sqlite3', 'pino'] }],
    },
  },
);
