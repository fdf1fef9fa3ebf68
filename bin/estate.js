#!/usr/bin/env node
// The `estate` command. Estate ships as TypeScript run through tsx, so a fresh clone needs no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
