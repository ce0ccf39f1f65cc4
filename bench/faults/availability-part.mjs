// availability: latency of GET /api/health polled at a fixed rate, (1) while `mneme serve` catches up
// on a backlog of messages nobody extracted yet, from the moment the server process starts, and (2)
// while another process holds the write lock (BEGIN IMMEDIATE) and clients keep posting messages.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort, repositoryRoot, sleep, spawnNode, startServer } from './child-processes.mjs';
import { openDatabase, pendingMessages } from './database-checks.mjs';
import { send } from './http-client.mjs';
import { seededRandom, userSentence } from './seeded-text.mjs';

/** The value at `fraction` of a sorted list (nearest rank). */
function percentile(sorted, fraction) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * fraction) - 1)];
}

/** p50, p99 and max of the answered requests, in milliseconds. */
function latency(samples) {
  const answered = samples.filter((sample) => sample.status !== undefined).map((sample) => sample.milliseconds);
  answered.sort((left, right) => left - right);
  return {
    p50: percentile(answered, 0.5),
    p99: percentile(answered, 0.99),
    max: answered.at(-1) ?? null,
  };
}

/**
 * Sends GET /api/health every `intervalMs` (whether earlier ones answered or not) until `stop()`;
 * each request gives up after `timeoutMs`.
 */
function pollHealth(url, { intervalMs, timeoutMs, onAnswer = () => ({}) }) {
  const samples = [];
  const pending = [];
  let stopped = false;
  const loop = (async () => {
    const started = performance.now();
    for (let index = 0; !stopped; index++) {
      const sentAt = performance.now() - started;
      const request = send(url, { path: '/api/health', timeoutMs }).then((response) =>
        samples.push({ sentAt, answeredAt: performance.now(), ...response, ...(response.status ? onAnswer() : {}) }),
      );
      pending.push(request);
      await sleep(Math.max(0, started + (index + 1) * intervalMs - performance.now()));
    }
  })();
  return {
    samples,
    async stop() {
      stopped = true;
      await loop;
      await Promise.all(pending);
      return samples;
    },
  };
}

function summary(samples) {
  return {
    requests: samples.length,
    answered: samples.filter((sample) => sample.status === 200).length,
    refused: samples.filter((sample) => sample.failure === 'refused').length,
    timeouts: samples.filter((sample) => sample.failure === 'timeout').length,
    otherFailures: samples.filter((sample) => sample.failure && !['refused', 'timeout'].includes(sample.failure))
      .length,
    ...latency(samples),
  };
}

/**
 * A backlog of `backlog` messages nobody extracted, then `mneme serve` on it, polled from the moment its
 * process starts. Each health answer notes how many messages were still pending when it arrived.
 */
export async function catchUpAvailability({ folder, backlog, intervalMs, timeoutMs, maxSeconds, log }) {
  const database = join(folder, 'availability-backlog.db');
  const writer = spawnNode([
    join(repositoryRoot, 'bench', 'faults', 'backlog-writer.mjs'),
    database,
    String(backlog),
    '10',
  ]);
  const written = await writer.exited;
  if (written.code !== 0) throw new Error(`availability: the backlog writer failed: ${writer.output.stderr}`);
  const reader = openDatabase(database);
  const pendingAtStart = pendingMessages(reader);
  const port = await freePort();
  const started = performance.now();
  const poller = pollHealth(`http://127.0.0.1:${port}`, {
    intervalMs,
    timeoutMs,
    onAnswer: () => ({ pending: pendingMessages(reader) }),
  });
  let server;
  let pending = pendingAtStart;
  let samples;
  try {
    server = await startServer(database, { port, readyTimeoutMs: maxSeconds * 1000 });
    while (pending > 0 && performance.now() - started < maxSeconds * 1000) {
      await sleep(250);
      pending = pendingMessages(reader);
    }
    await sleep(500);
  } finally {
    samples = await poller.stop();
    reader.close();
  }
  const caughtUp = performance.now() - started;
  await server.stop();
  const listening = server.listeningAfterMs;
  const result = {
    backlog: pendingAtStart,
    leftAtEnd: pending,
    listeningAfterMs: Math.round(listening),
    caughtUpAfterMs: Math.round(caughtUp),
    answeredWhileBacklogPending: samples.filter((sample) => sample.status === 200 && sample.pending > 0).length,
    unanswered: samples.filter(
      (sample) => sample.failure === 'timeout' || (sample.failure && sample.sentAt >= timeoutMs),
    ).length,
    refusedBeforeListening: samples.filter((sample) => sample.failure === 'refused').length,
    ...summary(samples),
  };
  log(
    `availability: backlog of ${pendingAtStart}: listening after ${result.listeningAfterMs} ms, caught up by ${result.caughtUpAfterMs} ms; ${result.answeredWhileBacklogPending} health answers during the catch-up; p50 ${result.p50?.toFixed(1)} ms, p99 ${result.p99?.toFixed(1)} ms, max ${result.max?.toFixed(1)} ms; ${result.unanswered} unanswered within ${timeoutMs} ms of start`,
  );
  return result;
}

/**
 * One period of `holdMs` during which another connection holds the write lock (BEGIN IMMEDIATE), clients
 * post a message every `writeIntervalMs`, and health is polled from 250 ms after the first write (when
 * that write is waiting for the lock) until the lock is released.
 */
async function holdLock(server, database, random, { holdMs, intervalMs, writeIntervalMs, timeoutMs }) {
  const holder = openDatabase(database);
  holder.exec('BEGIN IMMEDIATE');
  const started = performance.now();
  const writes = [];
  const write = (index) => {
    const json = { channelId: 'lock-room', sender: 'ana', content: userSentence(random, `locked-${holdMs}-${index}`) };
    writes.push(send(server.url, { method: 'POST', path: '/api/messages', json, timeoutMs }));
  };
  let releasedAt;
  let healthSamples;
  try {
    write(0);
    await sleep(250);
    const poller = pollHealth(server.url, { intervalMs, timeoutMs });
    for (let index = 1; performance.now() - started < holdMs; index++) {
      await sleep(writeIntervalMs);
      write(index);
    }
    releasedAt = performance.now();
    holder.exec('ROLLBACK');
    healthSamples = await poller.stop();
  } finally {
    holder.close();
  }
  const answers = await Promise.all(writes);
  return {
    heldMs: Math.round(releasedAt - started),
    answeredWhileLocked: healthSamples.filter((sample) => sample.status === 200 && sample.answeredAt < releasedAt)
      .length,
    ...summary(healthSamples),
    writes: answers.length,
    writesBusy: answers.filter((answer) => answer.status === 503).length,
    writesBusyWithRetryAfter: answers.filter((answer) => answer.status === 503 && answer.headers['retry-after']).length,
    writesAccepted: answers.filter((answer) => answer.status === 202).length,
    writesTimedOut: answers.filter((answer) => answer.failure === 'timeout').length,
    writesOther: answers.filter(
      (answer) => answer.status !== 503 && answer.status !== 202 && answer.failure !== 'timeout',
    ).length,
    writeMaxMs: Math.max(...answers.map((answer) => answer.milliseconds)),
  };
}

/**
 * The write lock held twice by another process: `shortHoldMs`, under mneme's 5-second busy timeout
 * (writes wait, then go through), and `longHoldMs`, past it (writes must be answered 503 with
 * Retry-After). Health must be answered meanwhile: it does not touch the database.
 */
export async function lockAvailability({
  folder,
  shortHoldMs,
  longHoldMs,
  intervalMs,
  writeIntervalMs,
  timeoutMs,
  log,
}) {
  const database = join(folder, 'availability-lock.db');
  const server = await startServer(database);
  const random = seededRandom(23);
  try {
    const warmUp = { channelId: 'lock-room', sender: 'ana', content: userSentence(random, 'warm-up') };
    await send(server.url, { method: 'POST', path: '/api/messages', json: warmUp });
    await sleep(500);
    const phases = {};
    for (const [name, holdMs] of [
      ['short', shortHoldMs],
      ['long', longHoldMs],
    ]) {
      phases[name] = await holdLock(server, database, random, { holdMs, intervalMs, writeIntervalMs, timeoutMs });
      const phase = phases[name];
      log(
        `availability: lock held ${phase.heldMs} ms: ${phase.answeredWhileLocked} health answers while held; p50 ${phase.p50?.toFixed(1)} ms, p99 ${phase.p99?.toFixed(1)} ms, max ${phase.max?.toFixed(1)} ms, ${phase.timeouts} timeouts; writes: ${phase.writesBusy} 503, ${phase.writesAccepted} accepted, ${phase.writesTimedOut} unanswered, of ${phase.writes}`,
      );
      await sleep(1000);
    }
    return phases;
  } finally {
    await server.stop();
  }
}
