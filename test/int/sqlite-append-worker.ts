/**
 * One of the racing writers in sqlite-multiprocess.test.ts. Usage: <db path> <stream> <worker id> <appends>.
 * Opens the store, says `ready`, waits for `go` on stdin so every worker races from the same moment, then appends
 * with the exact revision it just read, retrying on ConcurrencyError. Prints one JSON summary line and exits 0.
 */
import { ConcurrencyError, type ExpectedRevision } from '#app/ports';
import { createSqliteEventStore } from '#store/sqlite-event-store';

const [path, streamId, worker, count] = process.argv.slice(2);
if (!path || !streamId || !worker || !count) throw new Error('usage: <db path> <stream> <worker id> <appends>');

const store = createSqliteEventStore({ path });
process.stdout.write('ready\n');
await new Promise<void>((resolve) => {
  process.stdin.on('data', (chunk) => {
    if (chunk.toString().includes('go')) resolve();
  });
});
process.stdin.pause();

let conflicts = 0;
for (let seq = 0; seq < Number(count); seq++) {
  for (;;) {
    const events = await store.readStream(streamId);
    const expected: ExpectedRevision = events.length === 0 ? 'no_stream' : events[events.length - 1]!.revision;
    try {
      await store.append(streamId, [{ type: 'Appended', data: { worker, seq } }], { expectedRevision: expected });
      break;
    } catch (error) {
      if (!(error instanceof ConcurrencyError)) throw error;
      conflicts++;
    }
  }
}
await store.close();
process.stdout.write(`${JSON.stringify({ worker, appended: Number(count), conflicts })}\n`);
