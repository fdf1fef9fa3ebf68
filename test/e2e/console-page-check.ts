/**
 * What both console browser tests check on every page they show: it is ready, axe-core finds no serious or critical
 * violation, and (with CONSOLE_SCREENSHOTS=1, `npm run console:screenshots`) its screenshot goes to docs/console/.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { REPO_ROOT } from './helpers.ts';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const SHOTS = process.env.CONSOLE_SCREENSHOTS === '1' ? join(REPO_ROOT, 'docs', 'console') : null;
if (SHOTS) mkdirSync(SHOTS, { recursive: true });

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown }[];
}

export const checkConsolePage = async (page: Page, name: string): Promise<void> => {
  await page.waitForSelector('html[data-console-ready="1"]');
  await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations)')) as AxeViolation[];
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`);
  expect(bad, `${name}: accessibility`).toEqual([]);
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
};
