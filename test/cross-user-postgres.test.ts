import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyDatabase } from '../src/config/copy-database.js';
import type { Memory } from '../src/core/types.js';
import {
  hasPostgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { runCli } from './cli-harness.js';
import {
  A,
  B,
  CAROL,
  CHANNELS,
  canariesIn,
  carolsCanaries,
  PUBLIC_ROOM,
  reopenWorld,
  seedWorld,
  type World,
} from './cross-user-world.js';
import { mnemeBinary, startServeProcess } from './serve-process.js';

/*
 * The attack world on PostgreSQL beyond the route table (test/cross-user.test.ts runs the table on
 * every store): a copy between SQLite and PostgreSQL must keep who every key is, every scope and
 * membership exactly; and two `mneme serve` processes on one database must agree at once on a
 * revoked key and a purged user.
 */

const folder = mkdtempSync(join(tmpdir(), 'mneme-cross-user-pg-'));
let server: Promise<TestPostgresServer> | undefined;
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await (await server)?.stop();
  rmSync(folder, { recursive: true, force: true });
});
const serverDatabase = (name: string) => {
  server ??= startTestPostgresServer();
  return server.then((started) => started.database(name));
};

type Keys = Record<string, string>;
type Send = World['send'];

/** What decides who reads a memory, and what it says. */
function identity(memory: Memory) {
  const { id, scope, userId, channelId, topicId, projectId, archivedAt, content, pinned } = memory;
  return { id, scope, userId, channelId, topicId, projectId, archivedAt, content, pinned };
}

/** A listing as a key sees it: the status, and the memories' identities (or the refusal's code). */
async function listed(send: Send, key: string, query: string) {
  const response = await send(key, 'GET', `/api/memories?limit=500&archived=include${query}`);
  if (response.status !== 200)
    return { status: response.status, code: (JSON.parse(response.text) as { code: string }).code };
  const { memories } = JSON.parse(response.text) as { memories: Memory[] };
  return { status: 200, memories: memories.map(identity) };
}

const spaces = [
  '',
  ...CHANNELS.map((channel) => `&channelId=${channel}`),
  `&topicId=${A.topic}`,
  `&topicId=${B.topic}`,
  `&projectId=${A.project}`,
  `&projectId=${B.project}`,
];

/**
 * Everything that says who may read what, read through the faces without touching a memory: who each
 * key is (its listing in every space, or its refusal), each channel and its turns as each key, the
 * keys with their revocations, the whole export (memberships, scopes and owners of every record) and
 * each user's own export.
 */
async function accessOf(world: { send: Send; mneme: World['mneme'] }, keys: Keys) {
  const view: Record<string, unknown> = {};
  for (const [name, key] of Object.entries(keys)) {
    for (const space of spaces) view[`${name} lists ${space}`] = await listed(world.send, key, space);
    view[`${name} channels`] = (await world.send(key, 'GET', '/api/channels')).text;
    for (const channel of CHANNELS) {
      for (const path of [`/api/channels/${channel}`, `/api/channels/${channel}/turns?count=200`]) {
        const response = await world.send(key, 'GET', path);
        view[`${name} ${path}`] = response.status === 200 ? response.text : response.status;
      }
    }
  }
  view.keys = (await world.mneme.apiKeys.list()).map(({ prefix, label, userId, revokedAt }) => ({
    prefix,
    label,
    userId,
    revokedAt,
  }));
  // The whole export, and each user's own (a data-subject access request: what they may see and said).
  for (const userId of [undefined, A.user, B.user, CAROL]) {
    const lines: string[] = [];
    for await (const line of world.mneme.exportData(userId === undefined ? {} : { userId })) lines.push(line);
    view[`export of ${userId ?? 'everything'}`] = lines;
  }
  return view;
}

/** A's searches in every space A may name, and B's in B's direct channel: what each finds of B's. */
async function searched(send: Send, keys: Keys) {
  const leaked: string[] = [];
  const query = 'password garage tea vase back door code deadline pricing passport';
  for (const viewer of [{}, { channelId: A.room }, { channelId: PUBLIC_ROOM }, { topicId: A.topic }]) {
    for (const path of ['/api/memories/search', '/api/context']) {
      const response = await send(keys.a ?? '', 'POST', path, { query, viewer, topK: 100 });
      expect(response.status).toBe(200);
      const { hits } = JSON.parse(response.text) as { hits: unknown[] };
      leaked.push(...canariesIn(JSON.stringify(hits)));
    }
  }
  const bob = await send(keys.b ?? '', 'POST', '/api/memories/search', { query, viewer: { channelId: B.dm } });
  return { leaked, bobFinds: canariesIn(bob.text) };
}

describe('the attack world copied between SQLite and PostgreSQL', () => {
  it('keeps every key who it was (revoked ones refused), every scope, membership and refusal, in PGlite, a PostgreSQL 15 server and back in SQLite; A finds none of B there', async () => {
    const source = join(folder, 'world.db');
    const world = await seedWorld({ name: 'SQLite file', path: async () => source, vectors: true });
    const keys: Keys = { ...world.keys };
    for (const [name, userId] of [
      ['oldA', A.user],
      ['oldB', B.user],
      ['oldAdmin', undefined],
    ] as const) {
      const created = await world.mneme.apiKeys.create({ label: name, ...(userId ? { userId } : {}) });
      await world.mneme.apiKeys.revoke(created.prefix);
      keys[name] = created.key;
    }
    const before = await accessOf(world, keys);
    await world.mneme.close();
    expect(before['a lists '] as object).toMatchObject({ status: 200 });
    expect(before[`a lists &channelId=${B.dm}`] as object).toMatchObject({ status: 403 });
    expect(before['oldAdmin lists '] as object).toMatchObject({ status: 401 });
    expect(canariesIn(JSON.stringify(before[`b lists &channelId=${B.dm}`]))).toContain('hunter2');

    const targets = [
      `pglite:${join(folder, 'world-pglite')}`,
      ...(hasPostgresBinaries ? [await serverDatabase('copied_world')] : []),
    ];
    const checked: string[] = [];
    for (const [index, target] of targets.entries()) {
      await copyDatabase({ from: source, to: target });
      const back = join(folder, `world-back-${index}.db`);
      await copyDatabase({ from: target, to: back });
      for (const path of [target, back]) {
        const copy = await reopenWorld(path);
        try {
          expect(await accessOf(copy, keys), `${path} grants what the source granted`).toEqual(before);
          const { leaked, bobFinds } = await searched(copy.send, keys);
          expect(leaked, path).toEqual([]);
          expect(bobFinds, path).toContain('hunter2');
          checked.push(path);
        } finally {
          await copy.mneme.close();
        }
      }
    }
    expect(checked).toHaveLength(2 * targets.length);
  }, 240_000);
});

describe.skipIf(!hasPostgresBinaries)('two mneme serve processes on one PostgreSQL, the attack world in it', () => {
  it("refuse at once a key revoked by a third process, and once B is purged through one, the other serves none of B's words", async () => {
    expect(existsSync(mnemeBinary), 'run `npm run build` first').toBe(true);
    const url = await serverDatabase('two_serve_world');
    const world = await seedWorld({ name: 'PostgreSQL 15', path: async () => url, vectors: false });
    const phone = await world.mneme.apiKeys.create({ label: 'bob-phone', userId: B.user });
    const laptop = await world.mneme.apiKeys.create({ label: 'ann-laptop', userId: A.user });
    const carols = await carolsCanaries(world.mneme);
    await world.mneme.close();
    const first = await startServeProcess(url, children);
    const second = await startServeProcess(url, children);
    const status = async (key: string) =>
      Promise.all(
        [first, second].map(async (serve) => (await serve.call('GET', '/api/memories', undefined, key)).status),
      );
    expect(await status(laptop.key)).toEqual([200, 200]);
    expect(await status(phone.key)).toEqual([200, 200]);

    // Revoked by a third process (the CLI) while both serve: neither takes it from the next request on.
    expect(await runCli(url, ['keys', 'revoke', laptop.prefix], { create: false })).toMatchObject({ code: 0 });
    expect(await status(laptop.key)).toEqual([401, 401]);
    expect(await status(world.keys.a)).toEqual([200, 200]);

    const purged = await first.call('DELETE', `/api/users/${B.user}/data`, undefined, world.keys.admin);
    expect(purged).toMatchObject({ status: 200, body: { userId: B.user, apiKeys: 2 } });
    expect(await status(phone.key)).toEqual([401, 401]);
    expect(await status(world.keys.b)).toEqual([401, 401]);
    const left: string[] = [];
    const look = (where: string, value: unknown) => {
      for (const canary of canariesIn(JSON.stringify(value))) if (!carols.has(canary)) left.push(`${where}: ${canary}`);
    };
    const query = 'password garage tea vase back door code deadline pricing passport zanzibar';
    for (const [key, who] of [
      [world.keys.admin, 'admin'],
      [world.keys.a, 'A'],
    ] as const) {
      for (const path of ['/api/memories/search', '/api/context']) {
        const answer = await second.call('POST', path, { query, topK: 100 }, key);
        expect(answer.status).toBe(200);
        look(`${who} ${path}`, answer.body.hits);
      }
      look(`${who} lists`, (await second.call('GET', '/api/memories?limit=500&archived=include', undefined, key)).body);
    }
    for (const channel of [B.dm, B.room]) {
      look(
        `turns of ${channel}`,
        (await second.call('GET', `/api/channels/${channel}/turns?count=200`, undefined, world.keys.admin)).body,
      );
    }
    expect(left).toEqual([]);
    const room = await second.call('GET', `/api/channels/${B.room}`, undefined, world.keys.admin);
    expect(room.body).toMatchObject({ members: [CAROL] });
  }, 120_000);
});

describe.each([
  { name: 'PGlite', path: async () => 'pglite:memory:' },
  ...(hasPostgresBinaries ? [{ name: 'a PostgreSQL 15 server', path: () => serverDatabase('nul_input') }] : []),
])('a NUL character on $name', ({ path }) => {
  it('is refused as invalid input (422 problem+json) wherever text is stored, never a 500, and the request stores nothing', async () => {
    const world = await reopenWorld(await path());
    try {
      const send = (method: string, route: string, body: unknown) => world.send(null, method, route, body);
      expect(
        (await send('POST', '/api/messages', { channelId: A.room, sender: A.user, content: 'Ann is here' })).status,
      ).toBe(202);
      await world.mneme.whenIdle();
      const before = await world.mneme.stats();
      const legit = { channelId: A.room, sender: A.user, content: 'Ann waters the plants' };
      const refused: Array<[string, string, unknown]> = [
        ['POST', '/api/memories', { content: 'x\u0000y', scope: 'personal', userId: A.user }],
        ['POST', '/api/messages', { ...legit, content: 'hello\u0000there' }],
        ['POST', '/api/messages', { ...legit, channelId: 'chan\u0001\u0000nel' }],
        ['POST', '/api/messages/batch', { messages: [legit, { ...legit, content: 'second\u0000one' }] }],
        [
          'POST',
          '/api/exchanges',
          { channelId: A.room, userId: A.user, userMessage: 'Where is it?', assistantReply: 'In the\u0000attic' },
        ],
        ['PUT', `/api/users/${A.user}`, { displayName: 'Ann\u0000' }],
      ];
      const answers: string[] = [];
      for (const [method, route, body] of refused) {
        const response = await send(method, route, body);
        answers.push(`${method} ${route} ${response.status} ${response.contentType}`);
        // A display name is refused before the store sees it, on every store (ADR 40).
        expect(response.text, route).toMatch(
          route.startsWith('/api/users/') ? /control or invisible/ : /NUL character/,
        );
      }
      expect(answers).toEqual(refused.map(([method, route]) => `${method} ${route} 422 application/problem+json`));
      await world.mneme.whenIdle();
      const after = await world.mneme.stats();
      expect({ messages: after.messages, memories: after.total }).toEqual({
        messages: before.messages,
        memories: before.total,
      });
      expect(world.errors).toEqual([]);
    } finally {
      await world.mneme.close();
    }
  });
});
