// The store `mneme bench` builds, for the instruments beside it (`ingest-statements.mjs`, `cycle-rss.mjs`): the bench's
// seeded corpus (seed 42, 768 dimensions) remembered one memory at a time through the bench's precomputed model, then,
// on SQLite, the vector lists built (`indexStep` until done). A kept store is reused by copying it.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const { createMneme } = await import(join(root, 'dist/index.js'));
const { openStorage } = await import(join(root, 'dist/config/open-storage.js'));
const { createSyntheticCorpus } = await import(join(root, 'dist/bench/synthetic-corpus.js'));
const { createPrecomputedEmbeddingModel } = await import(join(root, 'dist/bench/precomputed-embedding-model.js'));
const { benchMessage: benchInput, rememberOne } = await import(join(root, 'dist/bench/bench-engine.js'));

export const corpus = createSyntheticCorpus({ seed: 42, dimensions: 768 });
export const model = createPrecomputedEmbeddingModel('bench-precomputed-768', 768);
export { rememberOne };

const quiet = { warn() {}, info() {} };

/** An engine on `path` as the bench opens mneme: the precomputed model, no backfill, no log. */
export const openBenchEngine = (path) => createMneme({ path, embedder: model, backfill: false, logger: quiet });

/** Builds a store of `size` memories at `path` (a file, or a server database when `server`), as `mneme bench` does. */
export async function buildBenchStore(path, size, { server = false } = {}) {
  const mneme = await openBenchEngine(path);
  for (let index = 0; index < size; index++) {
    await rememberOne(mneme, model, corpus.memory(index));
    if ((index + 1) % 10_000 === 0) console.error(`built ${index + 1} of ${size} memories`);
  }
  await mneme.close();
  if (server) return;
  const storage = await openStorage({ path });
  while (await storage.maintenance.indexStep());
  await storage.close();
}

/** The bench's message `index` as an ingest input. */
export const benchMessage = (index) => benchInput(corpus, index);
