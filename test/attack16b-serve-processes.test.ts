import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { createPgPoolDatabase, type PostgresDatabase } from '../src/storage/postgres/postgres-database.js';
import {
  hasPostgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { runCli } from './cli-harness.js';
import { startLoopbackServer } from './loopback-server.js';
import { mnemeBinary, type ServeProcess, startServeProcess } from './serve-process.js';

/**
 * Real \`mneme serve\` processes on one PostgreSQL server (ADR 19, 2026-12-03: a step holds the write lock before
 * the reads that decide its facts). The same facts of the same users are said in several channels at once, to
 * different processes; a process is killed with SIGKILL and started again; the server stops and starts. After
 * each, every fact of an owner is one memory, every message has its chunks once, and no recall by a user key
 * ever showed another user's personal memory or a room of a channel the user is not in.
 */
const channelsOf: Record<string, string[]> = {
  ann: ['ann-1', 'ann-2', 'ann-bob'],
  bob: ['bob-1', 'bob-2', 'ann-bob'],
  cid: ['cid-1', 'cid-2', 'cid-3'],
};
const statements = [
  'I moved to Lisbon last year.',
  'My sister Ana lives in Oslo.',
  'I prefer green tea over coffee.',
  'My brother Ben works as a pilot.',
  'I play the cello on Sundays.',
  'I moved to Porto last year.',
];

interface Hit {
  memory: { id: number; scope: string; userId: string | null; channelId: string | null; content: string };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A database of the server with an admin key, a key per user, short leases and its channels declared. */
async function setUp(server: TestPostgresServer, name: string) {
  const url = await server.database(name);
  const created = await runCli(url, ['--json', 'keys', 'create', '--label', 'ops']);
  const admin = (JSON.parse(created.stdout) as { key: string }).key;
  const keys: Record<string, string> = {};
  for (const user of Object.keys(channelsOf)) {
    const made = await runCli(url, ['--json', 'keys', 'create', '--label', user, '--user', user]);
    keys[user] = (JSON.parse(made.stdout) as { key: string }).key;
  }
  expect((await runCli(url, ['policy', 'set', 'ingest.extractionLeaseSeconds=2'])).code).toBe(0);
  const members = new Map<string, string[]>();
  for (const [user, channels] of Object.entries(channelsOf)) {
    for (const channel of channels) members.set(channel, [...(members.get(channel) ?? []), user]);
  }
  for (const [channel, users] of members) {
    expect((await runCli(url, ['channels', 'put', channel, '--members', users.join(',')])).code).toBe(0);
  }
  return { url, admin, keys, database: createPgPoolDatabase(url) };
}

/** Every user says `text` in each of their channels at once, to the process `to(channel index)`. */
async function sayEverywhere(text: string, admin: string, to: (index: number) => ServeProcess) {
  const sends = Object.entries(channelsOf).flatMap(([user, channels]) =>
    channels.map((channelId, index) =>
      to(index).call(
        'POST',
        '/api/exchanges',
        { channelId, userId: user, userMessage: text, assistantReply: `Noted: ${text}` },
        admin,
      ),
    ),
  );
  return Promise.all(sends);
}

/** Ann and Bob recall with their own keys until `stop()`; every hit another user's or of a channel not theirs is a leak. */
function recallAll(keys: Record<string, string>, to: (index: number) => ServeProcess) {
  const statuses: number[] = [];
  const leaks: string[] = [];
  let going = true;
  const done = (async () => {
    for (let round = 0; going; round++) {
      await Promise.all(
        ['ann', 'bob'].map(async (user, index) => {
          const channelId = channelsOf[user]?.[round % 3];
          for (const query of ['Lisbon Porto moved', 'sister Ana Oslo', 'green tea coffee', 'brother pilot']) {
            const body = { query, viewer: { userId: user, channelId }, topK: 20 };
            const answer = await to(round + index)
              .call('POST', '/api/memories/search', body, keys[user])
              .catch(() => ({ status: -1, body: {} as Record<string, unknown> }));
            statuses.push(answer.status);
            for (const { memory } of (answer.body.hits ?? []) as Hit[]) {
              const others = memory.scope === 'personal' && memory.userId !== user;
              const elsewhere =
                memory.channelId !== null && memory.scope === 'room' && !channelsOf[user]?.includes(memory.channelId);
              if (others || elsewhere) leaks.push(`${user}: ${JSON.stringify(memory)}`);
            }
          }
        }),
      );
      await sleep(20);
    }
  })();
  return {
    statuses,
    leaks,
    async stop() {
      going = false;
      await done;
    },
  };
}

/** Waits until every user message is past its channel's watermark. */
async function untilExtracted(database: PostgresDatabase, within = 40_000) {
  const backlog = async () =>
    (
      await database.query<{ id: number }>(`SELECT m.id FROM messages m WHERE m.role = 'user' AND m.id > COALESCE(
        (SELECT watermark FROM maintenance_state s WHERE s.channel_id = m.channel_id AND s.task = 'extraction'), 0)`)
    ).rows;
  const deadline = Date.now() + within;
  while ((await backlog()).length > 0 && Date.now() < deadline) await sleep(300);
  expect(await backlog()).toEqual([]);
}

/** Exactly once: no active fact twice in an owner, one moved-to fact an owner, one chunk per message and index. */
async function expectExactlyOnce(database: PostgresDatabase) {
  const { rows: duplicates } = await database.query(
    `SELECT owner, content, count(*)::int AS copies FROM memories WHERE archived_at IS NULL AND superseded_by IS NULL
     AND category <> 'exchange' GROUP BY owner, content HAVING count(*) > 1`,
  );
  expect(duplicates).toEqual([]);
  const { rows: moved } = await database.query(
    `SELECT owner, array_agg(content) AS contents FROM memories WHERE archived_at IS NULL AND superseded_by IS NULL
     AND category <> 'exchange' AND content LIKE '%moved to%' GROUP BY owner HAVING count(*) > 1`,
  );
  expect(moved).toEqual([]);
  const { rows: chunks } = await database.query(
    `SELECT chunk_message_id, chunk_index, count(*)::int AS copies FROM memories WHERE category = 'exchange'
     GROUP BY chunk_message_id, chunk_index HAVING count(*) > 1`,
  );
  expect(chunks).toEqual([]);
  const { rows: unchunked } = await database.query(
    `SELECT id FROM messages WHERE role = 'user' AND NOT EXISTS
       (SELECT 1 FROM memories WHERE category = 'exchange' AND chunk_message_id = messages.id)`,
  );
  expect(unchunked).toEqual([]);
}

function expectHealthy(serves: readonly ServeProcess[]) {
  for (const serve of serves) {
    expect(serve.child.exitCode).toBe(null);
    expect(serve.stderr()).not.toMatch(/MaxListenersExceeded|nhandled|Error:/);
    expect(serve.stderr()).not.toMatch(/ 500 /);
  }
}

describe.skipIf(!hasPostgresBinaries)('mneme serve processes on one PostgreSQL extracting the same facts', () => {
  let server: TestPostgresServer;
  const children: ChildProcess[] = [];
  const databases: PostgresDatabase[] = [];

  beforeAll(async () => {
    expect(existsSync(mnemeBinary), 'run `npm run build` first').toBe(true);
    server = await startTestPostgresServer();
  }, 60_000);

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    for (const database of databases) await database.close();
    await server?.stop();
  });

  /**
   * Three serve processes on the database; `rounds` rounds of every statement said in every channel, each channel's
   * message sent to another process each round, while both users recall through their own keys; then, once every
   * message is extracted: every ingest accepted, every recall answered without a leak, each fact and message once.
   */
  async function ingestOnThree(run: {
    url: string;
    admin: string;
    keys: Parameters<typeof recallAll>[0];
    database: Parameters<typeof expectExactlyOnce>[0];
    rounds: number;
    env?: Record<string, string>;
  }): Promise<void> {
    const serves: ServeProcess[] = [];
    for (let i = 0; i < 3; i++) {
      serves.push(await startServeProcess(run.url, children, run.env ? { env: run.env } : undefined));
    }
    const at = (index: number) => serves[index % serves.length] as ServeProcess;
    const recalls = recallAll(run.keys, at);
    const statuses: number[] = [];
    for (let round = 0; round < run.rounds; round++) {
      for (const statement of statements) {
        for (const answer of await sayEverywhere(statement, run.admin, (index) => at(index + round))) {
          statuses.push(answer.status);
        }
      }
    }
    await untilExtracted(run.database);
    await recalls.stop();
    expect(statuses.filter((status) => status !== 202)).toEqual([]);
    expect(recalls.statuses.filter((status) => status !== 200)).toEqual([]);
    expect(recalls.leaks).toEqual([]);
    await expectExactlyOnce(run.database);
    expectHealthy(serves);
  }

  it('writes each fact of an owner once and extracts each message once with three processes, and no recall shows another user’s memory', async () => {
    const { admin, keys, url, database } = await setUp(server, 'three');
    databases.push(database);
    await ingestOnThree({ url, admin, keys, database, rounds: 4 });
  }, 60_000);

  it('writes each fact of an owner once with three processes extracting with a chat model and an embedder', async () => {
    const embedder = createFakeEmbeddingModel({ dimensions: 64 });
    const model = await startLoopbackServer(async (request) => {
      if (request.path === '/api/tags') {
        return { json: { models: [{ name: 'llama3.2:latest' }, { name: 'nomic-embed-text:latest' }] } };
      }
      const body = request.body as { input?: string[] | string; messages?: Array<{ content: string }>; model: string };
      if (request.path === '/api/embed') {
        const texts = typeof body.input === 'string' ? [body.input] : (body.input ?? []);
        const embeddings = (await embedder.embed(texts, 'document')).map((vector) => Array.from(vector));
        return { json: { model: body.model, embeddings } };
      }
      const prompt = body.messages?.at(-1)?.content ?? '';
      const name = /Speaker: (\S+)/.exec(prompt)?.[1] ?? 'someone';
      const said = /said:\n"""\n([^\n]*)/.exec(prompt)?.[1] ?? '';
      const fact = said.replace(/^I /, `${name} `).replace(/^My /, `${name}'s `);
      await sleep(Math.random() * 40);
      const facts = [{ content: fact, category: 'fact', importance: 0.6, scope: 'personal' }];
      const content = JSON.stringify({ facts });
      return { json: { model: body.model, message: { role: 'assistant', content }, done: true, done_reason: 'stop' } };
    });
    const { admin, keys, url, database } = await setUp(server, 'chat');
    databases.push(database);
    const env = {
      MNEME_EMBEDDER: 'ollama:nomic-embed-text',
      MNEME_CHAT: 'ollama:llama3.2',
      MNEME_OLLAMA_URL: model.url,
    };
    try {
      await ingestOnThree({ url, admin, keys, database, rounds: 2, env });
    } finally {
      await model.close();
    }
  }, 60_000);

  it('extracts each message once when one of two processes is killed with SIGKILL in the middle of the ingest and restarted', async () => {
    const { admin, keys, url, database } = await setUp(server, 'killed');
    databases.push(database);
    const serves: ServeProcess[] = [await startServeProcess(url, children), await startServeProcess(url, children)];
    const at = (index: number) => serves[index % serves.length] as ServeProcess;
    const recalls = recallAll(keys, (index) => at(index));
    // A backlog on the first process: all messages go to it.
    const statuses: number[] = [];
    for (let round = 0; round < 6; round++) {
      for (const statement of statements) {
        for (const answer of await sayEverywhere(`${statement} (${round})`, admin, () => at(0)))
          statuses.push(answer.status);
      }
    }
    const inTransaction = async () =>
      (
        await database.query(
          `SELECT pid FROM pg_stat_activity WHERE datname = 'killed' AND state LIKE 'idle in transaction%'`,
        )
      ).rows.length;
    for (let tries = 0; tries < 200 && (await inTransaction()) === 0; tries++) await sleep(5);
    const killed = serves[0] as ServeProcess;
    killed.child.kill('SIGKILL');
    await new Promise((resolve) => killed.child.once('exit', resolve));
    for (const statement of statements) {
      for (const answer of await sayEverywhere(statement, admin, () => at(1))) statuses.push(answer.status);
    }
    serves[0] = await startServeProcess(url, children);
    for (const statement of statements) {
      for (const answer of await sayEverywhere(statement, admin, (index) => at(index))) statuses.push(answer.status);
    }
    await untilExtracted(database);
    await recalls.stop();
    expect(statuses.filter((status) => status !== 202)).toEqual([]);
    expect(recalls.statuses.filter((status) => status !== 200 && status !== -1)).toEqual([]);
    expect(recalls.leaks).toEqual([]);
    await expectExactlyOnce(database);
    expectHealthy(serves.slice(1));
    expectHealthy([serves[0] as ServeProcess]);
  }, 60_000);

  it('answers 503 with Retry-After while the PostgreSQL server restarts and extracts each message once after', async () => {
    const { admin, keys, url, database } = await setUp(server, 'restarted');
    databases.push(database);
    const serves: ServeProcess[] = [await startServeProcess(url, children), await startServeProcess(url, children)];
    const at = (index: number) => serves[index % serves.length] as ServeProcess;
    const statuses: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const statement of statements) {
        for (const answer of await sayEverywhere(`${statement} (${round})`, admin, (index) => at(index + round)))
          statuses.push(answer.status);
      }
    }
    expect(statuses.filter((status) => status !== 202)).toEqual([]);
    await server.halt();
    const away: Array<{ status: number; retryAfter: string | null; path: string }> = [];
    for (const serve of serves) {
      for (const [method, path, body, key] of [
        [
          'POST',
          '/api/exchanges',
          { channelId: 'ann-1', userId: 'ann', userMessage: 'I moved to Faro last year.', assistantReply: 'ok' },
          admin,
        ],
        ['POST', '/api/memories/search', { query: 'moved', viewer: { userId: 'ann', channelId: 'ann-1' } }, keys.ann],
        ['GET', '/api/maintenance', undefined, admin],
      ] as const) {
        const response = await fetch(`${serve.url}${path}`, {
          method,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        away.push({ status: response.status, retryAfter: response.headers.get('retry-after'), path });
      }
    }
    await sleep(1500);
    await server.start();
    const after: number[] = [];
    for (const statement of statements) {
      for (const answer of await sayEverywhere(statement, admin, (index) => at(index + 1))) after.push(answer.status);
    }
    expect(away.filter((answer) => answer.status !== 503 || answer.retryAfter === null)).toEqual([]);
    expect(after.filter((status) => status !== 202)).toEqual([]);
    const recalls = recallAll(keys, at);
    await untilExtracted(database);
    await recalls.stop();
    expect(recalls.leaks).toEqual([]);
    expect(recalls.statuses.filter((status) => status !== 200)).toEqual([]);
    await expectExactlyOnce(database);
    expectHealthy(serves);
  }, 60_000);
});
