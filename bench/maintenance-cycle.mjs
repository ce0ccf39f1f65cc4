// One full maintenance cycle (decay, episodes, consolidate, link, dream) on 10,000 memories with
// 384-dimension vectors from the deterministic fake embedding model, then one incremental cycle
// after 200 more memories and messages arrive.
//
//   npm run build && node bench/maintenance-cycle.mjs [--memories 10000] [--dimensions 384] [--path file.db]
//
// Without --path the database is SQLite :memory:. Memories span 60 days (so Ebbinghaus decay
// archives the oldest), 5% are near-duplicates of an earlier memory of the same owner (so
// consolidation merges), 5% repeat an earlier memory in the global scope (so linking links), and 4
// channels hold 100 messages each (so episodes are written). The
// tasks read memories and vectors a page at a time; the printed heap and RSS show that the
// 10,000 vectors are never all held at once.
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
    dimensions: { type: 'string', default: '384' },
    path: { type: 'string' },
  },
});
const memoryCount = Number(values.memories);
const dimensions = Number(values.dimensions);
const DAY = 24 * 60 * 60 * 1000;
const end = Date.parse('2024-09-01T00:00:00.000Z');

/** mulberry32: the same corpus on every run. */
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

const random = randomGenerator(42);
const syllables = ['ka', 'lo', 'mi', 'ren', 'sto', 'vel', 'dra', 'quin', 'tor', 'bel', 'fen', 'gar', 'hol', 'jun'];
const words = new Set();
while (words.size < 5000) {
  let word = '';
  for (let index = 0; index < 4; index++) word += syllables[Math.floor(random() * syllables.length)];
  words.add(word);
}
const vocabulary = [...words];
const pick = () => vocabulary[Math.floor(random() * vocabulary.length)];
const sentence = (length) => Array.from({ length }, pick).join(' ');

function scopeOf(index) {
  const roll = index % 10;
  if (roll < 6) return { scope: 'personal', userId: `user${index % 100}` };
  if (roll < 8) return { scope: 'room', channelId: `room${index % 10}` };
  return { scope: 'global' };
}

const folder = values.path ? null : mkdtempSync(join(tmpdir(), 'mneme-bench-'));
const clock = createFixedClock(end - 60 * DAY);
const mneme = await createMneme({
  path: values.path ?? ':memory:',
  embedder: createFakeEmbeddingModel({ dimensions }),
  extractor: 'none',
  backfill: false,
  clock,
  logger: { warn: (message) => process.stderr.write(`${message}\n`) },
});

process.stderr.write(`writing ${memoryCount} memories (${dimensions} dimensions)...\n`);
const written = [];
for (let index = 0; index < memoryCount; index++) {
  clock.set(end - 60 * DAY + Math.floor((index / memoryCount) * 60 * DAY));
  // 5% repeat an earlier memory of the same owner with one more word (consolidation merges them);
  // 5% repeat one as a global memory (linking links them: never merged across owners).
  const roll = random();
  const earlier = written.length > 100 ? written[written.length - 1 - Math.floor(random() * 100)] : null;
  let owner = scopeOf(index);
  let content = `${owner.userId ?? owner.channelId ?? 'team'} ${sentence(8 + Math.floor(random() * 6))}`;
  if (earlier && roll < 0.05) {
    owner = earlier.owner;
    content = `${earlier.content} ${pick()}`;
  } else if (earlier && roll < 0.1 && earlier.owner.scope !== 'global') {
    owner = { scope: 'global' };
    content = `${earlier.content} ${pick()}`;
  }
  await mneme.remember({ content, ...owner });
  written.push({ content, owner });
}
for (let channel = 0; channel < 4; channel++) {
  for (let index = 0; index < 100; index++) {
    await mneme.ingest({
      channelId: `room${channel}`,
      sender: `user${index % 5}`,
      content: `${sentence(10)}. ${sentence(6)}.`,
      createdAt: new Date(end - 2 * DAY + index * 5 * 60 * 1000).toISOString(),
    });
  }
}
clock.set(end);

function memory() {
  const usage = process.memoryUsage();
  return `heap ${(usage.heapUsed / 2 ** 20).toFixed(1)} MB, peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(1)} MB`;
}

/** Runs every task once, in cycle order (as `maintain()` does), timing each. */
async function cycle(label) {
  const before = memory();
  const timings = [];
  const report = {};
  for (const task of ['decay', 'episodes', 'consolidate', 'link', 'dream']) {
    const started = performance.now();
    Object.assign(report, await mneme.maintain({ tasks: [task] }));
    timings.push([task, performance.now() - started]);
  }
  const total = timings.reduce((sum, [, elapsed]) => sum + elapsed, 0);
  const each = timings.map(([task, elapsed]) => `${task} ${(elapsed / 1000).toFixed(2)} s`).join(', ');
  console.log(`${label}: ${(total / 1000).toFixed(2)} s (${each})`);
  console.log(`  memory before: ${before}; after: ${memory()}`);
  console.log(`  ${JSON.stringify(report)}`);
}

const vectorMegabytes = (memoryCount * dimensions * 4) / 2 ** 20;
console.log(
  `${memoryCount} memories, ${dimensions}-dimension vectors (${vectorMegabytes.toFixed(1)} MB of vectors in all)`,
);
await cycle('full cycle');
for (let index = 0; index < 200; index++) {
  const owner = scopeOf(index);
  await mneme.remember({ content: `${owner.userId ?? owner.channelId ?? 'team'} ${sentence(10)}`, ...owner });
}
clock.set(end + 60 * 60 * 1000);
await cycle('incremental cycle (200 new memories, an hour later)');
await mneme.close();
if (folder) rmSync(folder, { recursive: true, force: true });
