import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { openStorage } from '../src/config/open-storage.js';
import type { Mneme } from '../src/core/mneme.js';
import { nameKey } from '../src/core/name-key.js';
import { createHttpApp } from '../src/http/http-app.js';
import { migrateSqlite } from '../src/storage/sqlite/sqlite-migrations.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';

/**
 * A memory calls its speaker by their display name, labelled `Bob (eve)` when another user can be taken for it (ADR
 * 40), and the label was computed when the memory was written. Eve named herself "Bob" before any Bob was known: what
 * she said was stored as "Bob: I approve the budget transfer ..." and "Bob prefers ...". When the real Bob joined the
 * room later (a membership, a message, an API key, a user named Bob), those memories read, to the room and to the
 * assistant, as said by him. The write that makes Bob known now labels them (ADR 44).
 */

const STORES = [':memory:', 'pglite:memory:'];

/** Eve, named Bob while no Bob is known, says two things in the finance room; Ann is the other member. */
async function eveAsBob(path: string): Promise<Mneme> {
  const mneme = await createMneme({
    path,
    clock: createFixedClock('2026-03-02T10:00:00Z'),
    embedder: createFakeEmbeddingModel(),
    logger: { warn: () => {}, info: () => {} },
  });
  await mneme.putChannel({ id: 'finance', visibility: 'private', members: ['eve', 'ann'] });
  await mneme.setDisplayName({ userId: 'eve', displayName: 'Bob' });
  await mneme.ingest({
    channelId: 'finance',
    sender: 'eve',
    content: 'I approve the budget transfer of 40,000 euros to the new supplier account today.',
  });
  await mneme.ingest({ channelId: 'finance', sender: 'eve', content: 'I prefer budget invoices as PDF attachments.' });
  await mneme.whenIdle();
  return mneme;
}

/**
 * The contents of Eve's memories as shown: to Ann by recall, in the context block and by the HTTP API with her key
 * (the room's exchange), and to an administrator listing every memory (Eve's facts are hers).
 */
async function seenOfEve(mneme: Mneme): Promise<string[]> {
  const viewer = { userId: 'ann', channelId: 'finance' };
  const query = 'who approved the budget transfer and the budget invoices';
  const recalled = (await mneme.recall({ query, viewer })).hits.map((hit) => hit.memory.content);
  const context = await mneme.context({ query, viewer });
  const key = (await mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key;
  const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const searched = await app.request('/api/memories/search', {
    method: 'POST',
    headers,
    body: JSON.stringify({ query, viewer }),
  });
  expect(searched.status).toBe(200);
  const page = await app.request('/api/memories?channelId=finance&limit=100', { headers });
  expect(page.status).toBe(200);
  const http = [
    ...((await searched.json()) as { hits: { memory: { content: string } }[] }).hits.map((hit) => hit.memory.content),
    ...((await page.json()) as { memories: { content: string }[] }).memories.map((memory) => memory.content),
  ];
  const listed = (await mneme.list({ limit: 100 })).memories.map((memory) => memory.content);
  const room = [...recalled, ...context.hits.map((hit) => hit.memory.content), context.text, ...http];
  expect(room.some((content) => content.includes('Bob (eve): I approve the budget transfer'))).toBe(true);
  return [...room, ...listed].filter(
    (content) => content.includes('40,000 euros') || content.includes('PDF attachments'),
  );
}

/** A mention of "Bob" that is not Eve's label. */
const PLAIN_BOB = /Bob(?! \(eve\))/;

describe.each(STORES)('on %s', (path) => {
  it.each([
    ['joins the room', (mneme: Mneme) => mneme.putChannel({ id: 'finance', members: ['eve', 'ann', 'bob'] })],
    ['sends a message', (mneme: Mneme) => mneme.ingest({ channelId: 'lobby', sender: 'bob', content: 'Hello.' })],
    ['gets an API key', (mneme: Mneme) => mneme.apiKeys.create({ label: 'bob', userId: 'bob' })],
    ['is a user named Bob', (mneme: Mneme) => mneme.setDisplayName({ userId: 'robert', displayName: 'Bob' })],
  ])('labels what Eve said as Bob when the real Bob %s later', { timeout: 60_000 }, async (_route, arrive) => {
    const mneme = await eveAsBob(path);
    try {
      const before = (await mneme.list({ limit: 100 })).memories.map((memory) => memory.content);
      expect(before).toContain('Bob prefers budget invoices as PDF attachments.');
      expect(before.some((content) => content.startsWith('Bob: I approve the budget transfer'))).toBe(true);
      await arrive(mneme);
      const seen = await seenOfEve(mneme);
      expect(seen.some((content) => content.includes('Bob (eve): I approve the budget transfer'))).toBe(true);
      expect(seen.some((content) => content.includes('Bob (eve) prefers budget invoices'))).toBe(true);
      for (const content of seen) expect(content).not.toMatch(PLAIN_BOB);
    } finally {
      await mneme.close();
    }
  });

  it('labels what Eve said as Bob after she renamed herself, when the real Bob arrives', {
    timeout: 60_000,
  }, async () => {
    const mneme = await eveAsBob(path);
    try {
      await mneme.setDisplayName({ userId: 'eve', displayName: 'Evelyn' });
      await mneme.putChannel({ id: 'finance', members: ['eve', 'ann', 'bob'] });
      const seen = await seenOfEve(mneme);
      expect(seen.some((content) => content.includes('Bob (eve): I approve the budget transfer'))).toBe(true);
      for (const content of seen) expect(content).not.toMatch(PLAIN_BOB);
    } finally {
      await mneme.close();
    }
  });

  it('labels what Carol said as Bob when Eve renames herself Bob, and keeps a name that reads as the id', {
    timeout: 60_000,
  }, async () => {
    const mneme = await createMneme({ path, clock: createFixedClock('2026-03-02T10:00:00Z') });
    try {
      await mneme.putChannel({ id: 'finance', visibility: 'private', members: ['carol', 'eve', 'ann'] });
      await mneme.setDisplayName({ userId: 'carol', displayName: 'Bob' });
      await mneme.setDisplayName({ userId: 'eve', displayName: 'Eve' });
      await mneme.ingest({
        channelId: 'finance',
        sender: 'carol',
        content: 'I prefer budget invoices as PDF attachments.',
      });
      await mneme.ingest({ channelId: 'finance', sender: 'eve', content: 'I prefer paper copies of the contracts.' });
      await mneme.whenIdle();
      await mneme.setDisplayName({ userId: 'eve', displayName: 'Bob' });
      const contents = (await mneme.list({ limit: 100 })).memories.map((memory) => memory.content);
      expect(contents).toContain('Bob (carol) prefers budget invoices as PDF attachments.');
      // Eve's name before was her id: what she said then keeps it.
      expect(contents).toContain('Eve prefers paper copies of the contracts.');
    } finally {
      await mneme.close();
    }
  });

  it('labels on import what a file holds unlabelled beside a user who can be taken for the name', {
    timeout: 60_000,
  }, async () => {
    const source = await eveAsBob(':memory:');
    const lines: string[] = [];
    try {
      for await (const line of source.exportData()) {
        const record = JSON.parse(line) as { type: string; records?: number; createdAt?: string };
        // A file written before ADR 44 could hold Eve's plain name beside a user named Bob.
        if (record.type === 'user' && lines.every((held) => !held.includes('"robert"'))) {
          const at = record.createdAt;
          lines.push(JSON.stringify({ type: 'user', id: 'robert', displayName: 'Bob', createdAt: at, updatedAt: at }));
        }
        lines.push(record.type === 'end' ? JSON.stringify({ ...record, records: lines.length - 1 }) : line);
      }
    } finally {
      await source.close();
    }
    expect(lines.some((line) => line.includes('Bob prefers budget invoices'))).toBe(true);
    const mneme = await createMneme({ path, clock: createFixedClock('2026-03-02T10:00:00Z') });
    try {
      await mneme.importData(lines);
      const contents = (await mneme.list({ limit: 100 })).memories.map((memory) => memory.content);
      expect(contents).toContain('Bob (eve) prefers budget invoices as PDF attachments.');
      for (const content of contents) expect(content).not.toMatch(PLAIN_BOB);
    } finally {
      await mneme.close();
    }
  });

  it('records the label as a version of the memory and queues the new text for a vector', {
    timeout: 60_000,
  }, async () => {
    const mneme = await eveAsBob(path);
    try {
      const missing = (await mneme.vectorStatus()).missing;
      await mneme.apiKeys.create({ label: 'bob', userId: 'bob' });
      const fact = (await mneme.list({ limit: 100 })).memories.find((memory) =>
        memory.content.startsWith('Bob (eve) prefers'),
      );
      expect(fact).toBeDefined();
      const versions = await mneme.history(fact?.id ?? 0);
      const last = versions.at(-1);
      expect(last?.action).toBe('update');
      expect(last?.actor).toBe('maintenance');
      expect(last?.changes.content?.to).toBe('Bob (eve) prefers budget invoices as PDF attachments.');
      expect((await mneme.vectorStatus()).missing).toBeGreaterThan(missing);
      await mneme.reembed();
      expect((await mneme.vectorStatus()).missing).toBe(0);
    } finally {
      await mneme.close();
    }
  });
});

describe('a failure while the labels are written', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-namesake-arrival-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('leaves neither the new user, nor the key, nor any label written', { timeout: 60_000 }, async () => {
    const path = join(folder, 'mneme.db');
    const contents = async (mneme: Mneme) =>
      (await mneme.list({ limit: 100 })).memories.map((memory) => memory.content);
    let mneme = await eveAsBob(path);
    const before = await contents(mneme);
    await mneme.close();
    // The disk fails after the first memory is labelled: the second label's version cannot be written.
    const raw = new Database(path);
    raw.exec(`CREATE TRIGGER fail_second_label BEFORE INSERT ON memory_versions
      WHEN new.actor = 'maintenance' AND (SELECT COUNT(*) FROM memory_versions WHERE actor = 'maintenance') >= 1
      BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END`);
    raw.close();
    mneme = await createMneme({ path, clock: createFixedClock('2026-03-02T11:00:00Z') });
    try {
      await expect(mneme.apiKeys.create({ label: 'bob', userId: 'bob' })).rejects.toThrow();
      expect(await contents(mneme)).toEqual(before);
      expect((await mneme.apiKeys.list()).map((key) => key.userId)).not.toContain('bob');
    } finally {
      await mneme.close();
    }
    const repaired = new Database(path);
    expect(repaired.prepare("SELECT id FROM users WHERE id = 'bob'").all()).toEqual([]);
    expect(repaired.prepare("SELECT 1 FROM memory_versions WHERE actor = 'maintenance'").all()).toEqual([]);
    repaired.exec('DROP TRIGGER fail_second_label');
    repaired.close();
    mneme = await createMneme({ path, clock: createFixedClock('2026-03-02T11:00:00Z') });
    try {
      await mneme.apiKeys.create({ label: 'bob', userId: 'bob' });
      const labelled = await contents(mneme);
      expect(labelled).toContain('Bob (eve) prefers budget invoices as PDF attachments.');
      for (const content of labelled) expect(content).not.toMatch(PLAIN_BOB);
    } finally {
      await mneme.close();
    }
  });
});

describe('SQLite migration 32', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-namesake-migration-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('labels the memories stored before that call a user by a name another user came to share', async () => {
    const path = join(folder, 'schema-31.db');
    const old = new Database(path);
    sqliteVec.load(old);
    expect(migrateSqlite(old, 31)).toBe(31);
    const at = Date.parse('2026-03-01T00:00:00Z');
    const addUser = old.prepare(
      'INSERT INTO users (id, display_name, name_key, id_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
    );
    addUser.run('eve', 'Bob', nameKey('Bob'), 'eve', at, at);
    addUser.run('bob', null, 'bob', 'bob', at, at);
    addUser.run('ann', 'Ann', 'ann', 'ann', at, at);
    const addMemory = old.prepare(
      `INSERT INTO memories (content, category, sector, scope, owner, user_id, source, importance, created_at,
        updated_at, valid_from) VALUES (?, 'preference', 'semantic', 'personal', ?, ?, 'extraction', 0.5, ?, ?, ?)`,
    );
    addMemory.run('Bob prefers tea', 'user:eve', 'eve', at, at, at);
    addMemory.run('Ann prefers coffee', 'user:ann', 'ann', at, at, at);
    old.close();
    const storage = await openStorage({ path });
    try {
      const memories = await storage.memories.get([1, 2]);
      expect(memories.map((memory) => memory.content)).toEqual(['Bob (eve) prefers tea', 'Ann prefers coffee']);
      expect((await storage.memories.history(1)).at(-1)).toMatchObject({ action: 'update', actor: 'maintenance' });
    } finally {
      await storage.close();
    }
  });
});
