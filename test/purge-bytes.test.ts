import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { ErrorCode } from '../src/core/errors.js';
import type { Mneme } from '../src/core/mneme.js';
import type { PurgeReport } from '../src/core/types.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-purge-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * The user's id and words only they ever say. FTS5 stores a term after the prefix it shares with the
 * term before it on its page, so each word is looked for whole and without its first three letters.
 */
const secretWords = ['zedkowsky', 'zorblatt', 'fnordikump', 'vexquorn', 'plimtraxx', 'grundelwock', 'quazzelhoft'];
const needles = secretWords.flatMap((word) => [word, word.slice(3)]);

/** The needles found in the database file and its -wal and -shm files, with the file each is in. */
function needlesIn(path: string): string[] {
  const found: string[] = [];
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (!existsSync(file)) continue;
    const bytes = readFileSync(file);
    for (const needle of needles) {
      if (bytes.indexOf(Buffer.from(needle, 'utf8')) >= 0)
        found.push(`${needle} in ${file.slice(path.length) || 'db'}`);
    }
  }
  return found;
}

/** Rows of any table that still name the user. */
function rowsNaming(path: string, userId: string): string[] {
  const database = new Database(path, { readonly: true });
  try {
    const tables = database
      .prepare<[], { name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'",
      )
      .all()
      .map((row) => row.name);
    const naming: string[] = [];
    for (const table of tables) {
      for (const row of database.prepare(`SELECT * FROM "${table}"`).all() as Record<string, unknown>[]) {
        const text = JSON.stringify(row);
        if (text.includes(userId) || needles.some((needle) => text.includes(needle))) naming.push(`${table}: ${text}`);
      }
    }
    return naming;
  } finally {
    database.close();
  }
}

const start = Date.parse('2024-06-01T09:00:00.000Z');
const at = (minutes: number) => new Date(start + minutes * 60_000).toISOString();

/** Opens a database file, lets `write` fill it, checks the words are in it, purges the user and closes it. */
async function purgeAfter(
  name: string,
  write: (mneme: Mneme) => Promise<void>,
): Promise<{ path: string; report: PurgeReport }> {
  const path = join(folder, `${name}.db`);
  const mneme = await createMneme({
    path,
    clock: createFixedClock('2024-06-15T12:00:00.000Z'),
    embedder: createFakeEmbeddingModel(),
  });
  try {
    await mneme.setDisplayName({ userId: 'zedkowsky', displayName: 'Zedkowsky' });
    await write(mneme);
    await mneme.whenIdle();
    await mneme.maintain({ now: at(24 * 60) });
    expect(needlesIn(path).length).toBeGreaterThan(0);
    return { path, report: await mneme.purgeUser('zedkowsky') };
  } finally {
    await mneme.close();
  }
}

describe('purging a user from a database file', () => {
  it("leaves none of the user's words in the file, its WAL or its shared memory, and no row naming the user", async () => {
    const { path, report } = await purgeAfter('conversation', async (mneme) => {
      await mneme.ingestMany([
        {
          channelId: 'dm-zedkowsky',
          userId: 'zedkowsky',
          userMessage: 'I prefer zorblatt tea in the morning, never fnordikump coffee',
          assistantReply: 'Noted!',
          createdAt: at(0),
          topicId: 'zedkowsky-topic',
        },
        {
          channelId: 'general',
          sender: 'zedkowsky',
          content: 'Our team always deploys the vexquorn service on Fridays with plimtraxx',
          createdAt: at(1),
          topicId: 'zedkowsky-topic',
        },
        { channelId: 'general', sender: 'amy', content: 'Really? I thought we stopped doing that', createdAt: at(2) },
        {
          channelId: 'general',
          sender: 'zedkowsky',
          content: 'I live in grundelwock with my sister, she works at quazzelhoft',
          createdAt: at(3),
        },
        // Amy's turn keeps Zedkowsky's message before it as search-only context, which the purge clears.
        { channelId: 'general', sender: 'amy', content: 'Nice, say hello to her from me', createdAt: at(4) },
        {
          channelId: 'general',
          sender: 'amy',
          content: 'Shall we meet on Monday to plan the release?',
          createdAt: at(5),
        },
      ]);
      await mneme.remember({
        content: 'Zedkowsky keeps a zorblatt plant named quazzelhoft',
        scope: 'personal',
        userId: 'zedkowsky',
      });
    });
    expect(report.messages).toBe(4);
    expect(needlesIn(path)).toEqual([]);
    expect(rowsNaming(path, 'zedkowsky')).toEqual([]);
  });

  it("leaves none of the user's words behind after many writes, edits, page splits and index merges", async () => {
    const { path } = await purgeAfter('busy', async (mneme) => {
      for (let round = 0; round < 30; round++) {
        await mneme.ingestMany(
          Array.from({ length: 20 }, (_, index) =>
            index % 3
              ? {
                  channelId: index % 2 ? 'general' : 'random',
                  sender: 'zedkowsky',
                  content: `I always say zorblatt and quazzelhoft, number ${round} ${index}, in grundelwock`,
                  createdAt: at(10 + round * 20 + index),
                }
              : {
                  channelId: index % 2 ? 'general' : 'random',
                  sender: 'amy',
                  content: `Amy says word${round}x${index} again and again`,
                  createdAt: at(10 + round * 20 + index),
                },
          ),
        );
        await mneme.whenIdle();
        const note = await mneme.remember({
          content: `Zedkowsky note vexquorn ${round}`,
          scope: 'personal',
          userId: 'zedkowsky',
        });
        await mneme.update({ id: note.id, content: `Zedkowsky note plimtraxx fnordikump changed ${round}` });
        await mneme.remember({ content: `A global note about release ${round}`, scope: 'global' });
      }
    });
    expect(needlesIn(path)).toEqual([]);
    expect(rowsNaming(path, 'zedkowsky')).toEqual([]);
  });

  it('says the erasure did not finish while another connection reads, and a second purge finishes it', async () => {
    const path = join(folder, 'reader.db');
    const mneme = await createMneme({ path, busyTimeoutMs: 100 });
    const reader = new Database(path, { readonly: true });
    try {
      await mneme.ingest({ channelId: 'general', sender: 'zedkowsky', content: 'I keep a zorblatt in grundelwock' });
      await mneme.ingest({ channelId: 'general', sender: 'amy', content: 'Amy keeps nothing at all' });
      await mneme.whenIdle();
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM messages').get();
      await expect(mneme.purgeUser('zedkowsky')).rejects.toMatchObject({
        code: ErrorCode.StoreBusy,
        message: expect.stringMatching(/^user zedkowsky was purged, but erasing the deleted bytes .* purge again/),
      });
      reader.exec('COMMIT');
      expect(await mneme.purgeUser('zedkowsky')).toMatchObject({ messages: 0, memories: 0 });
    } finally {
      reader.close();
      await mneme.close();
    }
    expect(needlesIn(path)).toEqual([]);
  });
});

/** The files of a folder and its subfolders, but for `skip` (relative paths). */
function filesUnder(root: string, skip: readonly string[], under = ''): string[] {
  return readdirSync(join(root, under), { withFileTypes: true }).flatMap((entry) => {
    const path = join(under, entry.name);
    if (skip.includes(path)) return [];
    return entry.isDirectory() ? filesUnder(root, skip, path) : entry.isFile() ? [path] : [];
  });
}

/** The needles found in the files of a PGlite folder but for its write-ahead log, with the file each is in. */
function needlesInPglite(folder: string, skip: readonly string[] = ['pg_wal']): string[] {
  return filesUnder(folder, skip).flatMap((file) => {
    const bytes = readFileSync(join(folder, file));
    return needles.filter((needle) => bytes.indexOf(Buffer.from(needle, 'utf8')) >= 0).map((n) => `${n} in ${file}`);
  });
}

describe('purging a user from a PostgreSQL database (PGlite)', () => {
  it("leaves none of the user's words in the tables' and indexes' files once closed, the write-ahead log aside", async () => {
    const data = join(folder, 'pglite-purge');
    const open = () =>
      createMneme({
        path: `pglite:${data}`,
        clock: createFixedClock('2024-06-15T12:00:00.000Z'),
        embedder: createFakeEmbeddingModel(),
      });
    let mneme = await open();
    try {
      await mneme.setDisplayName({ userId: 'zedkowsky', displayName: 'Zedkowsky' });
      for (let round = 0; round < 3; round++) {
        await mneme.ingestMany([
          {
            channelId: 'general',
            sender: 'zedkowsky',
            content: `I always say zorblatt and quazzelhoft in grundelwock, vexquorn ${round}`,
            createdAt: at(round * 3),
            topicId: 'zedkowsky-topic',
          },
          { channelId: 'general', sender: 'amy', content: `Amy answers round ${round}`, createdAt: at(round * 3 + 1) },
        ]);
        const note = await mneme.remember({
          content: 'Zedkowsky note plimtraxx',
          scope: 'personal',
          userId: 'zedkowsky',
        });
        await mneme.update({ id: note.id, content: `Zedkowsky note fnordikump changed ${round}` });
      }
      await mneme.whenIdle();
      await mneme.maintain({ now: at(24 * 60) });
    } finally {
      await mneme.close();
    }
    // Closed, PGlite has written its pages: the words are in the table files.
    expect(needlesInPglite(data).length).toBeGreaterThan(0);
    mneme = await open();
    try {
      expect((await mneme.purgeUser('zedkowsky')).messages).toBe(3);
      expect((await mneme.list({ limit: 100 })).memories.map((memory) => memory.content).join(' ')).not.toMatch(
        /zedkowsky|zorblatt/i,
      );
    } finally {
      await mneme.close();
    }
    expect(needlesInPglite(data)).toEqual([]);
  }, 120_000);
});
