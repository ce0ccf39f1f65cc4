// Recall latency on 10,000 memories: p50 / p95 / p99 of `recall` (topK 10), lexical-only and
// hybrid with the deterministic fake embedding model (64 and 384 dimensions).
//
//   npm run build && node bench/recall-latency.mjs [--memories 10000] [--queries 300] [--file]
//
// The database is SQLite :memory:, or with --file a new file in a temporary folder (WAL, synchronous
// FULL). Every recall also writes its touch, as in use.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createMneme } from '../dist/index.js';
import { createFakeEmbeddingModel, createFixedClock } from '../dist/testing.js';

const { values } = parseArgs({
  options: {
    memories: { type: 'string', default: '10000' },
    queries: { type: 'string', default: '300' },
    file: { type: 'boolean', default: false },
  },
});
const memoryCount = Number(values.memories);
const queryCount = Number(values.queries);

/** mulberry32: the same corpus and queries on every run. */
function randomGenerator(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const syllables = ['ka', 'lo', 'mi', 'ren', 'sto', 'vel', 'dra', 'quin', 'tor', 'bel', 'fen', 'gar', 'hol', 'jun'];
function vocabulary(random, size) {
  const words = new Set();
  while (words.size < size) {
    const length = 2 + Math.floor(random() * 2);
    let word = '';
    for (let index = 0; index < length; index++) word += syllables[Math.floor(random() * syllables.length)];
    words.add(word);
  }
  return [...words];
}

/** Zipf-like pick: a few words are common, most are rare, as in real text. */
function pick(random, words) {
  return words[Math.floor(words.length * random() ** 2.5)];
}

function sentence(random, words, minimum, maximum) {
  const length = minimum + Math.floor(random() * (maximum - minimum + 1));
  return Array.from({ length }, () => pick(random, words)).join(' ');
}

function percentile(sorted, fraction) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))];
}

async function measure(label, embedder) {
  const random = randomGenerator(42);
  const words = vocabulary(random, 2000);
  const folder = values.file ? mkdtempSync(join(tmpdir(), 'mneme-bench-')) : null;
  const path = folder ? join(folder, 'bench.db') : ':memory:';
  const mneme = await createMneme({ path, embedder, clock: createFixedClock(), logger: { warn: () => {} } });
  const loadStart = performance.now();
  for (let index = 0; index < memoryCount; index++) {
    const roll = random();
    const scope =
      roll < 0.7
        ? {}
        : roll < 0.9
          ? { scope: 'personal', userId: `user-${index % 50}` }
          : { scope: 'room', channelId: `channel-${index % 10}` };
    await mneme.remember({ content: sentence(random, words, 8, 20), importance: random(), ...scope });
  }
  const loadSeconds = (performance.now() - loadStart) / 1000;
  const viewer = { userId: 'user-1', channelId: 'channel-1' };
  const queries = Array.from({ length: queryCount }, (_, index) =>
    sentence(random, words, 2, index % 5 === 0 ? 10 : 5),
  );
  for (const query of queries.slice(0, 20)) await mneme.recall({ query, viewer });
  const times = [];
  let hits = 0;
  for (const query of queries) {
    const start = performance.now();
    const result = await mneme.recall({ query, viewer, topK: 10 });
    times.push(performance.now() - start);
    hits += result.hits.length;
  }
  await mneme.close();
  if (folder) rmSync(folder, { recursive: true, force: true });
  times.sort((a, b) => a - b);
  const mean = times.reduce((sum, time) => sum + time, 0) / times.length;
  return {
    label,
    p50: percentile(times, 0.5).toFixed(2),
    p95: percentile(times, 0.95).toFixed(2),
    p99: percentile(times, 0.99).toFixed(2),
    mean: mean.toFixed(2),
    hitsPerRecall: (hits / times.length).toFixed(1),
    loadSeconds: loadSeconds.toFixed(1),
  };
}

console.log(
  `recall latency, ${memoryCount} memories in ${values.file ? 'a file' : ':memory:'}, ${queryCount} recalls (topK 10, one in five queries over 7 words), ms`,
);
const rows = [
  await measure('lexical only', 'none'),
  await measure('hybrid, fake embedder 64 dims', createFakeEmbeddingModel({ dimensions: 64 })),
  await measure('hybrid, fake embedder 384 dims', createFakeEmbeddingModel({ dimensions: 384 })),
];
console.table(rows);
