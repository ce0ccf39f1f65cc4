// Where a message's ingest goes: the time inside SQLite's statements against the whole, and the statements
// that take most of it, for `ingestMany` of the bench's messages into a store shaped as `mneme bench` builds it, or
// with --each for one `ingest()` a message (the bench's first messages, nearly all a sender's first in a channel).
//
//   npm run build && node bench/ingest-statements.mjs [--size 100000] [--messages 2000] [--store kept.db] [--each]
//   npm run build && node bench/ingest-statements.mjs --db postgres://user@host/postgres [--size 1000] [--messages 300]
//
// The store (the bench's seeded corpus, seed 42: `remember()` of each memory, then the vector lists built) is
// written to --store when that file does not exist, and reused when it does (a 100,000 store takes about three
// minutes to build). Each pass works on a copy of it. Pass 1 times the ingest alone (CPU a message by
// `process.cpuUsage()`); pass 2 times each call of a better-sqlite3 statement (`run`, `get`, `all`) and of
// `exec` / `pragma` with `performance.now()`, which costs a little itself: read its share, not its total.
// With --db (a PostgreSQL server; its user needs CREATEDB), each pass builds its store (no vector lists there) in a
// database of its own that it creates and drops, and pass 2 times each statement node-postgres sends: on a server
// the time a statement takes is mostly its round trip.
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    size: { type: 'string' },
    messages: { type: 'string' },
    store: { type: 'string' },
    db: { type: 'string' },
    each: { type: 'boolean' },
  },
});
const each = values.each === true;
const server = values.db ?? null;
const size = Number(values.size ?? (server === null ? 100_000 : 1_000));
const messages = Number(values.messages ?? (server === null ? 2_000 : 300));
if (!Number.isInteger(size) || size < 1 || !Number.isInteger(messages) || messages < 1) {
  console.error('ingest-statements: --size and --messages take whole numbers above 0');
  process.exit(2);
}
const root = dirname(dirname(fileURLToPath(import.meta.url)));
const Database = createRequire(import.meta.url)('better-sqlite3');
const { benchMessage, buildBenchStore, corpus, model, openBenchEngine } = await import('./bench-store.mjs');
const { createPostgresBenchDatabase, isBenchServerUrl } = await import(
  join(root, 'dist/bench/postgres-bench-database.js')
);
if (server !== null && !isBenchServerUrl(server)) {
  console.error('ingest-statements: --db takes a postgres:// URL');
  process.exit(2);
}

const folder = mkdtempSync(join(tmpdir(), 'mneme-ingest-statements-'));

// better-sqlite3's statement calls, timed while `timing` is on (calls inside a call, as a transaction's, once).
const probe = new Database(':memory:');
const Statement = probe.prepare('SELECT 1').constructor;
probe.close();
const bySql = new Map();
let timing = false;
let depth = 0;
const timed = (prototype, name) => {
  const original = prototype[name];
  prototype[name] = function (...args) {
    if (!timing || depth > 0) return original.apply(this, args);
    depth++;
    const started = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      const spent = performance.now() - started;
      depth--;
      const text = (typeof this.source === 'string' ? this.source : String(args[0])).replace(/\s+/g, ' ').trim();
      const entry = bySql.get(text) ?? { ms: 0, calls: 0 };
      entry.ms += spent;
      entry.calls++;
      bySql.set(text, entry);
    }
  };
};
for (const name of ['run', 'get', 'all']) timed(Statement.prototype, name);
for (const name of ['exec', 'pragma']) timed(Database.prototype, name);
// node-postgres: a statement is timed from its send to its answer (a promise, or the callback the pool passes).
const pg = createRequire(import.meta.url)('pg');
const sendQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (...args) {
  if (!timing || typeof args[0] !== 'string') return sendQuery.apply(this, args);
  const text = args[0].replace(/\s+/g, ' ').trim();
  const started = performance.now();
  const answered = () => {
    const entry = bySql.get(text) ?? { ms: 0, calls: 0 };
    entry.ms += performance.now() - started;
    entry.calls++;
    bySql.set(text, entry);
  };
  const last = args.length - 1;
  if (typeof args[last] === 'function') {
    const callback = args[last];
    args[last] = (...answer) => {
      answered();
      return callback(...answer);
    };
    return sendQuery.apply(this, args);
  }
  const result = sendQuery.apply(this, args);
  result?.then?.(answered, answered);
  return result;
};

const build = (path) => buildBenchStore(path, size, { server: server !== null });

/** One pass on a copy of the store: 20 recalls (as the bench's before its ingest), then the messages in batches. */
async function pass(store, instrumented) {
  let target;
  let dropped = null;
  if (server !== null) {
    const made = await createPostgresBenchDatabase(
      server,
      `mneme_ingest_statements_${process.pid}_${instrumented ? 2 : 1}`,
    );
    dropped = made;
    target = made.url;
    console.error(`building a store of ${size} memories in a database of the server`);
    await build(target);
  } else {
    target = join(folder, `pass-${instrumented ? 2 : 1}.db`);
    copyFileSync(store, target);
  }
  const mneme = await openBenchEngine(target);
  for (let index = 0; index < 20; index++) {
    const query = corpus.query(index, size);
    model.set(query.text, query.vector);
    await mneme.recall({ query: query.text, viewer: { userId: query.userId }, topK: 10 });
  }
  const started = process.cpuUsage();
  const wallStarted = performance.now();
  timing = instrumented;
  if (each) {
    // The bench's first set of messages, one `ingest()` each (most are a sender's first in a channel).
    for (let index = 0; index < messages; index++) await mneme.ingest(benchMessage(index));
  }
  for (let start = 0; start < messages && !each; start += 1_000) {
    const inputs = [];
    for (let index = start; index < Math.min(messages, start + 1_000); index++) {
      // The bench's second set of messages (its `ingestMany` batches), after the 1,000 of its `ingest()` calls.
      inputs.push(benchMessage(1_000 + index));
    }
    await mneme.ingestMany(inputs);
  }
  await mneme.whenIdle();
  timing = false;
  const cpu = process.cpuUsage(started);
  const wallMs = performance.now() - wallStarted;
  await mneme.close();
  await dropped?.drop();
  return { cpuMs: (cpu.user + cpu.system) / 1000, wallMs };
}

try {
  const store = values.store ?? join(folder, 'store.db');
  if (server === null && !existsSync(store)) {
    console.error(`building a store of ${size} memories in ${store}`);
    await build(store);
  }
  const plain = await pass(store, false);
  const instrumented = await pass(store, true);
  const inside = [...bySql.values()].reduce((sum, entry) => sum + entry.ms, 0);
  const perMessage = (ms) => (ms / messages).toFixed(3);
  console.log(
    `${messages} messages into ${size} memories (${each ? 'one ingest() each' : 'ingestMany'}, offline extractor, until idle)`,
  );
  console.log(
    `pass 1: ${perMessage(plain.cpuMs)} ms of CPU a message, ${Math.round((messages / plain.wallMs) * 1000)} messages/s`,
  );
  console.log(
    `pass 2 (each statement timed): ${perMessage(instrumented.wallMs)} ms a message, ${perMessage(inside)} ms of it ` +
      `inside statements (${((inside / instrumented.wallMs) * 100).toFixed(1)}%), ` +
      `${([...bySql.values()].reduce((sum, entry) => sum + entry.calls, 0) / messages).toFixed(1)} statement calls a message`,
  );
  console.log('ms a message  calls a message  statement');
  for (const [text, entry] of [...bySql].sort((a, b) => b[1].ms - a[1].ms).slice(0, 15)) {
    console.log(
      `${perMessage(entry.ms).padStart(11)}  ${(entry.calls / messages).toFixed(2).padStart(15)}  ${text.slice(0, 100)}`,
    );
  }
} finally {
  rmSync(folder, { recursive: true, force: true });
}
