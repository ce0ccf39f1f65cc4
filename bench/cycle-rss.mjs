// Where the peak resident set of `mneme bench`'s "ingest and the cycles" phase comes from: the kernel's peak
// (VmHWM, reset between phases through /proc/self/clear_refs; Linux only) after each phase of that phase as the
// bench runs it (1,000 `ingest()` calls, 1,000 messages in `ingestMany` batches, the first maintenance cycle one
// task at a time, 1,000 new memories, a second cycle), on a copy of a store built as the bench builds it.
//
//   npm run build && node --expose-gc bench/cycle-rss.mjs [--size 100000] [--store kept.db] [--gc-between-tasks]
//
// --gc-between-tasks collects garbage before each task of the first cycle (needs --expose-gc): a task's peak with
// and without it tells what it holds from what the collector had not yet freed. The store is written to --store
// when that file does not exist (about three minutes at 100,000), and reused when it does.
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { size: { type: 'string' }, store: { type: 'string' }, 'gc-between-tasks': { type: 'boolean' } },
});
const size = Number(values.size ?? 100_000);
if (!Number.isInteger(size) || size < 1) {
  console.error('cycle-rss: --size takes a whole number above 0');
  process.exit(2);
}
const gcBetween = values['gc-between-tasks'] === true;
if (typeof globalThis.gc !== 'function') {
  console.error('cycle-rss: run it with node --expose-gc (the phase starts after a collection, as in the bench)');
  process.exit(2);
}
const { benchMessage, buildBenchStore, corpus, model, openBenchEngine, rememberOne } = await import(
  './bench-store.mjs'
);

const MESSAGES = 1_000;
const folder = mkdtempSync(join(tmpdir(), 'mneme-cycle-rss-'));
try {
  const store = values.store ?? join(folder, 'store.db');
  if (!existsSync(store)) {
    console.error(`building a store of ${size} memories in ${store}`);
    await buildBenchStore(store, size);
  }
  const copy = join(folder, 'copy.db');
  copyFileSync(store, copy);
  const mneme = await openBenchEngine(copy);
  // As in the bench, recalls come first (the snapshots they keep stay resident through the phase).
  for (let index = 0; index < 60; index++) {
    const query = corpus.query(index, size);
    model.set(query.text, query.vector);
    await mneme.recall({ query: query.text, viewer: index % 2 ? { userId: query.userId } : {}, topK: 10 });
  }
  globalThis.gc();
  const MiB = (bytes) => (bytes / 1024 / 1024).toFixed(1);
  const peaks = [];
  const resetPeak = () => writeFileSync('/proc/self/clear_refs', '5');
  const phase = async (name, work) => {
    resetPeak();
    await work();
    peaks.push([name, process.resourceUsage().maxRSS * 1024]);
  };
  resetPeak();
  await phase('ingest, one ingest() each', async () => {
    for (let index = 0; index < MESSAGES; index++) await mneme.ingest(benchMessage(index));
    await mneme.whenIdle();
  });
  await phase('ingest, ingestMany batches of 100', async () => {
    for (let start = 0; start < MESSAGES; start += 100) {
      const inputs = [];
      for (let index = start; index < start + 100; index++) inputs.push(benchMessage(MESSAGES + index));
      await mneme.ingestMany(inputs);
    }
    await mneme.whenIdle();
  });
  for (const task of ['decay', 'episodes', 'consolidate', 'link', 'dream']) {
    if (gcBetween) globalThis.gc();
    await phase(`first cycle: ${task}`, () => mneme.maintain({ tasks: task }));
  }
  await phase('1,000 new memories', async () => {
    for (let index = size; index < size + 1_000; index++) await rememberOne(mneme, model, corpus.memory(index));
  });
  await phase('second cycle', () => mneme.maintain());
  await mneme.close();
  console.log(
    `peak resident set of each phase, MiB (${size} memories${gcBetween ? ', garbage collected before each task' : ''}):`,
  );
  for (const [name, bytes] of peaks) console.log(`${MiB(bytes).padStart(8)}  ${name}`);
  console.log(`${MiB(Math.max(...peaks.map(([, bytes]) => bytes))).padStart(8)}  the whole phase`);
} finally {
  rmSync(folder, { recursive: true, force: true });
}
