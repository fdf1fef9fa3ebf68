#!/usr/bin/env node
/**
 * Reads a conformance suite's result files (one `checks.json` per scenario, under the folder scripts/conformance.sh
 * passes as `-o`) and prints what scripts/conformance.sh reports:
 *
 *   node scripts/conformance-results.mjs summary <dir> <label> [requirements.yml]
 *     Counts: a scenario passes when none of its checks is a FAILURE (or a WARNING, which the 2026 requirement set
 *     scores as a failure too). With a requirement set, the scenarios it does not score (extensions, pending) are
 *     counted apart.
 *   node scripts/conformance-results.mjs explain <dir> <scenario>...
 *     The failed checks of the named scenarios: id, status, message, and their details (cut to 2,000 characters each),
 *     for a failure outside the baseline: the folder is a temp dir, gone by the time anyone reads a CI log.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import YAML from 'yaml';

/** Every scenario's checks under `dir`, named as the suites name them (`server-<name>-<timestamp>/checks.json`). */
const scenariosIn = (dir) => {
  const scenarios = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === 'checks.json') {
        const name = basename(d).replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '');
        scenarios.push({ name, checks: JSON.parse(readFileSync(p, 'utf8')) });
      }
    }
  };
  if (existsSync(dir)) walk(dir);
  return scenarios;
};

const tally = (list) => {
  let passed = 0;
  let checks = 0;
  let checksOk = 0;
  const failed = [];
  for (const s of list) {
    const bad = s.checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    checks += s.checks.filter((c) => ['SUCCESS', 'FAILURE', 'WARNING'].includes(c.status)).length;
    checksOk += s.checks.filter((c) => c.status === 'SUCCESS').length;
    if (bad.length === 0) passed++;
    else failed.push(`${s.name} (${bad.map((c) => `${c.id}${c.status === 'WARNING' ? ' [warning]' : ''}`).join(', ')})`);
  }
  return { passed, total: list.length, checks, checksOk, failed };
};

const summary = (dir, label, requirements) => {
  let notScored = new Set();
  if (requirements) {
    const doc = YAML.parse(readFileSync(requirements, 'utf8'));
    notScored = new Set((doc.not_scored ?? []).filter((e) => e.leg === 'server').map((e) => e.scenario));
  }
  const scenarios = scenariosIn(dir);
  const scored = tally(scenarios.filter((s) => !notScored.has(s.name)));
  console.log(`CONFORMANCE ${label}: ${scored.passed}/${scored.total} scenarios passed, ${scored.checksOk}/${scored.checks} checks passed`);
  for (const f of scored.failed) console.log(`  not passed: ${f}`);
  if (notScored.size > 0) {
    const extra = tally(scenarios.filter((s) => notScored.has(s.name)));
    console.log(`  not scored by the requirement set (extensions, pending): ${extra.passed}/${extra.total} scenarios passed, ${extra.checksOk}/${extra.checks} checks`);
  }
};

const explain = (dir, names) => {
  const wanted = new Set(names);
  for (const s of scenariosIn(dir)) {
    if (!wanted.has(s.name)) continue;
    for (const c of s.checks) {
      if (c.status === 'SUCCESS' || c.status === 'INFO') continue;
      console.log(`  why ${s.name}: ${c.id} ${c.status}: ${c.errorMessage ?? '(no message)'}`);
      if (c.details !== undefined) console.log(`    details: ${JSON.stringify(c.details).slice(0, 2000)}`);
    }
  }
};

const [mode, dir, ...rest] = process.argv.slice(2);
if (mode === 'summary' && dir && rest[0]) summary(dir, rest[0], rest[1]);
else if (mode === 'explain' && dir) explain(dir, rest);
else {
  console.error('usage: conformance-results.mjs summary <dir> <label> [requirements.yml] | explain <dir> <scenario>...');
  process.exit(2);
}
