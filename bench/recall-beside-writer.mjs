// Recall beside another connection to the same file that commits between its searches (ADR 27): one engine recalls
// the bench's queries (vector-only or lexical), a second engine on the same file recalls once every N of them (its
// touch of what it finds is a commit), as a second process would; p50 / p95 / p99 of the first engine's recalls.
//
//   npm run build && node bench/recall-beside-writer.mjs [--size 100000] [--store kept.db] [--every 10] [--leg vector]
//
// --every 0 runs the first engine alone; --leg vector | lexical. The store (the bench's seeded corpus, the vector
// lists built) is written to --store when that file does not exist, and reused when it does; each run works on a copy.
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { size: { type: 'string' }, store: { type: 'string' }, every: { type: 'string' }, leg: { type: 'string' } },
});
const size = Number(values.size ?? 100_000);
const every = Number(values.every ?? 10);
const leg = values.leg ?? 'vector';
if (
  !Number.isInteger(size) ||
  size < 1 ||
  !Number.isInteger(every) ||
  every < 0 ||
  !['vector', 'lexical'].includes(leg)
) {
  console.error(
    'recall-beside-writer: --size takes a whole number above 0, --every one of 0 or more, --leg vector or lexical',
  );
  process.exit(2);
}
const { buildBenchStore, corpus, model, openBenchEngine } = await import('./bench-store.mjs');
const { createMneme } = await import('../dist/index.js');

const RECALLS = 300;
const WARM_UP = 50;
const folder = mkdtempSync(join(tmpdir(), 'mneme-beside-writer-'));
try {
  const store = values.store ?? join(folder, 'store.db');
  if (!existsSync(store)) {
    console.error(`building a store of ${size} memories in ${store}`);
    await buildBenchStore(store, size);
  }
  const copy = join(folder, 'copy.db');
  copyFileSync(store, copy);
  const first =
    leg === 'vector'
      ? await openBenchEngine(copy)
      : await createMneme({ path: copy, embedder: 'none', backfill: false, logger: { warn() {}, info() {} } });
  const second = await createMneme({ path: copy, embedder: 'none', backfill: false, logger: { warn() {}, info() {} } });
  const times = [];
  for (let index = 0; index < RECALLS; index++) {
    const query = corpus.query(index % 200, size);
    // A vector-only recall: a token no memory holds, whose vector is the query's.
    const text = leg === 'vector' ? `zzqx${index}` : query.text;
    if (leg === 'vector') model.set(text, query.vector);
    if (every > 0 && index % every === 0) {
      await second.recall({ query: corpus.query(index, size).text, viewer: {}, topK: 10 });
    }
    const started = performance.now();
    await first.recall({ query: text, viewer: index % 2 ? { userId: query.userId } : {}, topK: 10 });
    times.push(performance.now() - started);
  }
  await first.close();
  await second.close();
  const sorted = times.slice(WARM_UP).sort((a, b) => a - b);
  const at = (share) => sorted[Math.floor(share * (sorted.length - 1))].toFixed(2);
  const beside = every === 0 ? 'alone' : `another connection recalling once every ${every}`;
  console.log(`${leg} recall at ${size}, ${beside}: p50 ${at(0.5)} p95 ${at(0.95)} p99 ${at(0.99)} ms`);
} finally {
  rmSync(folder, { recursive: true, force: true });
}
