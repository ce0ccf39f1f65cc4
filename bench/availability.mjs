// Availability of `mneme serve` while it works through an extraction backlog and while another
// process holds the write lock, measured against the built CLI in a child process.
//
//   npm run build && node bench/availability.mjs [--messages 3000]
//
// 1. Backlog: `--messages` synthetic user messages (20 channels) are appended through the store, so
//    none is extracted yet; then `mneme serve`. Prints the time from spawn to "listening", and the
//    latency of GET /api/health, asked one request after the other, until no message is past its
//    channel's extraction watermark (read from a second connection; the watermark moves per 100).
// 2. Stop: the same backlog; SIGTERM once the server listens and extraction has begun, then again
//    while another connection holds the write lock (the worker is waiting for it). Prints the time
//    from the signal to the exit, the exit code, what was left pending, and the integrity check.
// 3. Lock: another connection holds BEGIN IMMEDIATE. Prints the latency of POST /api/memories/search
//    and of GET /api/health while a POST /api/memories waits for the lock (released after 1 s), that
//    write's status and wait, and the exit code and time of `mneme search` in the same state.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { createSyntheticCorpus } from '../dist/bench/synthetic-corpus.js';
import { createSqliteStorage } from '../dist/storage/sqlite/sqlite-storage.js';

const { values } = parseArgs({ options: { messages: { type: 'string', default: '3000' } } });
const messageCount = Number(values.messages);
const binary = new URL('../dist/cli/mneme.js', import.meta.url).pathname;
const folder = mkdtempSync(join(tmpdir(), 'mneme-availability-'));
const env = { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' };

function percentile(sorted, fraction) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

function summary(latencies) {
  const sorted = [...latencies].sort((a, b) => a - b);
  const format = (value) => `${value.toFixed(1)} ms`;
  return `n ${sorted.length}, p50 ${format(percentile(sorted, 0.5))}, p95 ${format(percentile(sorted, 0.95))}, p99 ${format(percentile(sorted, 0.99))}, max ${format(sorted.at(-1) ?? Number.NaN)}`;
}

async function backlog(name) {
  const path = join(folder, `${name}.db`);
  const corpus = createSyntheticCorpus({ seed: 7, dimensions: 8, vocabularySize: 5000 });
  const storage = createSqliteStorage({ path });
  const start = Date.now() - messageCount * 1000;
  const messages = Array.from({ length: messageCount }, (_, index) => {
    const message = corpus.message(index);
    return {
      channelId: message.channelId,
      senderId: message.userId,
      role: 'user',
      content: message.content,
      topicId: null,
      createdAt: start + index * 1000,
    };
  });
  for (let index = 0; index < messages.length; index += 500) {
    await storage.messages.append(messages.slice(index, index + 500));
  }
  await storage.close();
  return path;
}

/** Messages past their channel's extraction watermark, read from another connection. */
function pendingCounter(path) {
  const reader = new Database(path, { readonly: true });
  const statement = reader.prepare(`SELECT count(*) AS pending FROM messages m
    WHERE m.id > COALESCE((SELECT watermark FROM maintenance_state s
      WHERE s.task = 'extraction' AND s.channel_id = m.channel_id), 0)`);
  return { count: () => statement.get().pending, close: () => reader.close() };
}

function serve(path) {
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [binary, 'serve', '--port', '0', '--db', path], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const listening = new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve({ url: match[1], after: performance.now() - spawnedAt });
    });
    exited.then(() => reject(new Error(`mneme serve exited: ${stderr}`)));
  });
  return { child, listening, exited, stderr: () => stderr };
}

async function timed(work) {
  const started = performance.now();
  const result = await work();
  return { result, ms: performance.now() - started };
}

async function measureBacklog() {
  const path = await backlog('backlog');
  const pending = pendingCounter(path);
  const server = serve(path);
  const { url, after } = await server.listening;
  const pendingAtListening = pending.count();
  const drainStart = performance.now();
  const latencies = [];
  while (pending.count() > 0) {
    const { result, ms } = await timed(() => fetch(`${url}/api/health`));
    await result.arrayBuffer();
    latencies.push(ms);
  }
  const drainMs = performance.now() - drainStart;
  server.child.kill('SIGTERM');
  await server.exited;
  pending.close();
  console.log(`backlog of ${messageCount} messages (20 channels), offline extractor, no embedding model`);
  console.log(`  listening ${after.toFixed(0)} ms after spawn, with ${pendingAtListening} messages pending`);
  console.log(`  GET /api/health during the backlog: ${summary(latencies)}`);
  console.log(`  backlog extracted ${drainMs.toFixed(0)} ms after listening`);
}

async function measureStop(holdLock) {
  const path = await backlog(holdLock ? 'stop-locked' : 'stop');
  const pending = pendingCounter(path);
  const server = serve(path);
  const { url } = await server.listening;
  // Extraction has begun: 300 messages extracted (a tenth of a backlog smaller than 3,000). A backlog of 300
  // or fewer never had "more pending than messageCount - 300", and this loop asked /api/health forever.
  const begun = messageCount - Math.min(300, Math.ceil(messageCount / 10));
  while (pending.count() > begun) await (await fetch(`${url}/api/health`)).arrayBuffer();
  const other = holdLock ? new Database(path) : null;
  if (other) {
    other.exec('BEGIN IMMEDIATE');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const signalled = performance.now();
  server.child.kill('SIGTERM');
  const { code, signal } = await server.exited;
  const stopMs = performance.now() - signalled;
  other?.exec('ROLLBACK');
  other?.close();
  const left = pending.count();
  pending.close();
  const check = new Database(path);
  const integrity = check.pragma('integrity_check', { simple: true });
  const messages = check.prepare('SELECT count(*) AS count FROM messages').get().count;
  check.close();
  console.log(
    holdLock
      ? 'SIGTERM during the backlog, 500 ms after another connection took the write lock'
      : 'SIGTERM during the backlog',
  );
  console.log(
    `  exited ${stopMs.toFixed(0)} ms after the signal, code ${code}${signal ? `, signal ${signal}` : ''}; ${left} messages left for the next start; integrity_check ${integrity}; ${messages} of ${messageCount} messages kept`,
  );
}

async function measureLock() {
  const path = await backlog('lock');
  const setup = spawn(
    process.execPath,
    [binary, '--db', path, '--create', 'add', 'The staging server is called kestrel'],
    {
      env,
      stdio: 'ignore',
    },
  );
  await new Promise((resolve) => setup.once('exit', resolve));
  const server = serve(path);
  const { url } = await server.listening;
  const pending = pendingCounter(path);
  while (pending.count() > 0) await new Promise((resolve) => setTimeout(resolve, 100));
  pending.close();

  const other = new Database(path);
  other.exec('BEGIN IMMEDIATE');
  const post = (route, body) =>
    fetch(`${url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const searches = [];
  const statuses = new Set();
  for (let index = 0; index < 50; index++) {
    const { result, ms } = await timed(() => post('/api/memories/search', { query: 'staging server' }));
    statuses.add(result.status);
    await result.arrayBuffer();
    searches.push(ms);
  }

  const writeStarted = performance.now();
  let writeDone = null;
  const write = post('/api/memories', { content: 'written while another process held the lock' }).then(
    async (response) => {
      await response.arrayBuffer();
      writeDone = { status: response.status, ms: performance.now() - writeStarted };
    },
  );
  setTimeout(() => other.exec('ROLLBACK'), 1000);
  const health = [];
  while (writeDone === null) {
    const { result, ms } = await timed(() => fetch(`${url}/api/health`));
    await result.arrayBuffer();
    if (writeDone === null) health.push(ms);
  }
  await write;

  other.exec('BEGIN IMMEDIATE');
  const cli = await timed(
    () =>
      new Promise((resolve) => {
        const search = spawn(process.execPath, [binary, '--db', path, 'search', 'staging server'], {
          env,
          stdio: 'ignore',
        });
        search.once('exit', (code) => resolve(code));
      }),
  );
  other.exec('ROLLBACK');
  other.close();
  server.child.kill('SIGTERM');
  await server.exited;
  console.log('another connection holds the write lock (BEGIN IMMEDIATE)');
  console.log(`  POST /api/memories/search: statuses ${[...statuses].join(', ')}; ${summary(searches)}`);
  console.log(`  GET /api/health while a write waits for the lock: ${summary(health)}`);
  console.log(
    `  the write answered ${writeDone.status} after ${writeDone.ms.toFixed(0)} ms (lock released at 1000 ms)`,
  );
  console.log(`  mneme search exited ${cli.result} after ${cli.ms.toFixed(0)} ms`);
}

try {
  await measureBacklog();
  await measureStop(false);
  await measureStop(true);
  await measureLock();
} finally {
  rmSync(folder, { recursive: true, force: true });
}
