import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createPgPoolDatabase, type PostgresDatabase } from '../src/storage/postgres/postgres-database.js';
import {
  hasPostgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { mnemeBinary, type ServeProcess, startServeProcess } from './serve-process.js';

const exchanges = 1000;
const channels = 5;
const names = 'Ana Ben Cleo Dov Eli Fay Gus Hana Ivo Jun Kai'.split(' ');
const cities = 'Lisbon Oslo Porto Kyoto Lima Quito Accra Hanoi Perth Cusco Dakar Minsk'.split(' ');
const jobs = 'pilot chemist baker nurse judge potter welder tailor surgeon'.split(' ');

/** The n-th user message: facts the offline extractor finds, new ones and ones that update earlier facts. */
function said(index: number): string {
  const city = (offset: number) => cities[(index + offset) % cities.length];
  const name = (offset: number) => names[(index + offset) % names.length];
  const job = (offset: number) => jobs[(index + offset) % jobs.length];
  return [
    `My sister ${name(0)} lives in ${city(5)}. I collect old maps from ${city(0)}.`,
    `My brother ${name(3)} works as a ${job(0)}. I play the cello on Sundays with ${name(7)}.`,
    `I prefer green tea over coffee. My mother teaches chemistry in ${city(7)}.`,
    `We moved to ${city(2)} last year, and my friend ${name(6)} is a ${job(4)}.`,
  ][index % 4] as string;
}

describe.skipIf(!hasPostgresBinaries)('two mneme serve processes on one PostgreSQL (postgresql-15)', () => {
  let server: TestPostgresServer;
  let database: PostgresDatabase;
  let url: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    expect(existsSync(mnemeBinary), 'run `npm run build` first').toBe(true);
    server = await startTestPostgresServer();
    url = await server.database('shared');
    // Short leases, so the lease of the killed process expires within the test.
    const setup = await createMneme({ path: url, policy: { ingest: { extractionLeaseSeconds: 2 } } });
    await setup.close();
    database = createPgPoolDatabase(url);
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await database?.close();
    await server?.stop();
  });

  /** User messages without their exchange memory: not extracted (yet). */
  const notExtracted = async () =>
    (
      await database.query<{ id: number }>(`SELECT id FROM messages WHERE role = 'user' AND NOT EXISTS (
        SELECT 1 FROM memories WHERE category = 'exchange' AND source_message_ids @> ARRAY[messages.id])`)
    ).rows.map((row) => row.id);

  it('extracts every message exactly once with 1,000 exchanges sent to both at random and one killed with kill -9 halfway and restarted', async () => {
    let first = await startServeProcess(url, children);
    const second = await startServeProcess(url, children);
    const send = (target: ServeProcess, index: number) =>
      target.call('POST', '/api/exchanges', {
        channelId: `room-${index % channels}`,
        userId: `user-${index % 7}`,
        userMessage: said(index),
        assistantReply: `Noted, thank you (${index}).`,
      });
    const sendRange = async (from: number, to: number) => {
      for (let start = from; start < to; start += 10) {
        const batch = Array.from({ length: Math.min(10, to - start) }, (_, offset) => start + offset);
        const answers = await Promise.all(batch.map((index) => send(Math.random() < 0.5 ? first : second, index)));
        for (const answer of answers) expect(answer.status).toBe(202);
      }
    };

    await sendRange(0, exchanges / 2);
    // Halfway: the first process is still extracting its backlog when it is killed.
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    first = await startServeProcess(url, children);
    await sendRange(exchanges / 2, exchanges);

    const deadline = Date.now() + 120_000;
    let left = await notExtracted();
    while (left.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      left = await notExtracted();
    }
    expect(left).toEqual([]);
    const { rows: users } = await database.query<{ count: number }>(
      "SELECT count(*) AS count FROM messages WHERE role = 'user'",
    );
    expect(users[0]?.count).toBe(exchanges);
    // Exactly once: no message's memories written twice (same message, category and content). The
    // originals a consolidation merged are archived and cite what the merged memory cites: left out.
    const { rows: duplicates } = await database.query(
      `SELECT cited, category, content, count(*) AS copies FROM memories, unnest(source_message_ids) AS cited
       WHERE archived_at IS NULL GROUP BY cited, category, content HAVING count(*) > 1`,
    );
    expect(duplicates).toEqual([]);
    const { rows: chunks } = await database.query<{ count: number }>(
      "SELECT count(*) AS count FROM memories WHERE category = 'exchange'",
    );
    expect(chunks[0]?.count).toBeGreaterThanOrEqual(exchanges);

    // The same recall from either process.
    for (const query of ['sister Lisbon', 'green tea chemistry', 'brother pilot cello']) {
      const body = { query, viewer: { userId: 'user-3', channelId: 'room-3' }, topK: 10, inspect: true };
      const [fromFirst, fromSecond] = await Promise.all([
        first.call('POST', '/api/memories/search', body),
        second.call('POST', '/api/memories/search', body),
      ]);
      expect(fromFirst.status).toBe(200);
      // Scores move with the clock between the two calls; what is found, and in what order, does not.
      const found = (answer: { body: Record<string, unknown> }) =>
        (answer.body.hits as Array<{ memory: { id: number; content: string }; match: string }>).map((hit) => [
          hit.memory.id,
          hit.memory.content,
          hit.match,
        ]);
      expect(found(fromFirst).length).toBeGreaterThan(0);
      expect(found(fromFirst)).toEqual(found(fromSecond));
    }
  }, 300_000);
});
