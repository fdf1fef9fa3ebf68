/**
 * One racing publisher (a separate OS process): publishes versions 1.1.0 .. 1.<count>.0 of one tool, each with
 * content unique to this worker, and prints one JSON line per attempt.
 */
import { loadConfig } from '#config';
import { DomainError } from '#domain/errors';
import { validateDefinition } from '#domain/tool-definition';
import { openEstate } from '#compose/estate';
import { raceDefinition } from './publish-race-definitions.ts';

const [storeUrl, workerId, countText, toolName] = process.argv.slice(2);
const count = Number(countText);
const estate = await openEstate(loadConfig({ store: storeUrl as string, by: `worker-${workerId}` }));
try {
  for (let v = 1; v <= count; v++) {
    const def = validateDefinition(raceDefinition(v, workerId as string, toolName), estate.compiler);
    try {
      const r = await estate.commands.publish(def, `worker-${workerId}`);
      process.stdout.write(`${JSON.stringify({ worker: workerId, version: def.version, result: r.result, code: r.error?.code ?? null, position: r.position ?? null })}\n`);
    } catch (e) {
      const code = e instanceof DomainError ? e.code : 'crash';
      process.stdout.write(`${JSON.stringify({ worker: workerId, version: def.version, result: 'error', code, message: String(e) })}\n`);
    }
  }
} finally {
  await estate.close();
}
