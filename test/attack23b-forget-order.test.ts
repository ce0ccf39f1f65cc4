import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { FactExtractor } from '../src/core/ports/fact-extractor.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import {
  hasPostgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { runCli } from './cli-harness.js';

/**
 * README, Ingest, chat commands: `/forget <pattern>` archives the sender's own memories that match. A `/forget`
 * runs in its message's append; the facts of the messages before it are extracted later, in the background.
 * So a chat history ingested at once (a batch, `mneme ingest` of a file, or a backlog the worker has not reached)
 * forgot nothing its sender said just before, and what they asked to forget was stored after the command: extraction
 * now applies the command again when it goes past it, to what it wrote from the messages before it.
 */
/** The two cases, on a database that `database(name)` opens (a new one each name). */
function forgetAfterItsMessage(database: (name: string) => Promise<string>, folder: () => string) {
  it('leaves no active memory of the sender matching the pattern once a batch of the message and its forget is extracted', async () => {
    const mneme = await createMneme({ path: await database('forget_batch'), embedder: 'none', chat: 'none' });
    try {
      const [, forget] = await mneme.ingestMany([
        { channelId: 'dm-oz', sender: 'oz', content: 'I love green tea every single morning at home' },
        { channelId: 'dm-oz', sender: 'oz', content: '/forget green tea' },
        { channelId: 'dm-oz', sender: 'oz', content: 'I still drink green tea at work though' },
      ]);
      expect(forget?.command?.command).toBe('forget');
      await mneme.whenIdle();
      const { memories } = await mneme.list({ userId: 'oz', scope: 'personal' });
      const contents = memories.map((memory) => memory.content).filter((content) => /green tea/i.test(content));
      // What was said after the command is kept.
      expect(contents.length).toBeGreaterThan(0);
      expect(contents.filter((content) => /morning/i.test(content))).toEqual([]);
    } finally {
      await mneme.close();
    }
  });

  it('leaves active a memory the user restored after the forget, when extraction then goes past the command', async () => {
    // The extractor waits at one message until released, so the command is appended, its first application archives
    // the memory, and the user restores it, all before extraction goes past the command.
    const offline = createOfflineExtractor();
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const gated: FactExtractor = {
      id: offline.id,
      async extract(input, options) {
        if (input.userMessage.includes('parcel')) await gate;
        return offline.extract(input, options);
      },
    };
    const mneme = await createMneme({ path: await database('forget_restored'), embedder: 'none', extractor: gated });
    try {
      await mneme.ingest({
        channelId: 'dm-oz',
        sender: 'oz',
        content: 'I love green tea every single morning at home',
      });
      await mneme.whenIdle();
      const tea = (await mneme.list({ userId: 'oz', scope: 'personal' })).memories.find((memory) =>
        /green tea/i.test(memory.content),
      );
      expect(tea).toBeDefined();
      await mneme.ingest({ channelId: 'dm-oz', sender: 'oz', content: 'A parcel for me should come on Monday' });
      const forget = await mneme.ingest({ channelId: 'dm-oz', sender: 'oz', content: '/forget green tea' });
      expect(forget.command?.command).toBe('forget');
      expect((await mneme.get(tea?.id ?? 0))?.archivedAt).not.toBeNull();
      await mneme.restore(tea?.id ?? 0);
      release();
      await mneme.whenIdle();
      // The user took it back after the command: it stays.
      expect((await mneme.get(tea?.id ?? 0))?.archivedAt).toBeNull();
    } finally {
      release();
      await mneme.close();
    }
  });

  it('leaves no active memory of the sender matching the pattern after mneme ingest of a file whose later line forgets it', async () => {
    const url = await database('forget_file');
    const file = join(folder(), 'chat.jsonl');
    writeFileSync(
      file,
      `${[
        { channelId: 'dm-oz', sender: 'oz', content: 'My sister Ana lives in Lisbon and she teaches chemistry' },
        { channelId: 'dm-oz', sender: 'oz', content: '/forget *sister*' },
      ]
        .map((line) => JSON.stringify(line))
        .join('\n')}\n`,
    );
    const ingested = await runCli(url, ['ingest', file, '--no-progress']);
    expect(ingested.code, ingested.stderr).toBe(0);
    const listed = await runCli(url, ['list', '--json', '--user', 'oz', '--archived', 'include']);
    expect(listed.code, listed.stderr).toBe(0);
    const memories = (
      JSON.parse(listed.stdout) as { memories: { content: string; scope: string; archivedAt: string | null }[] }
    ).memories.filter((memory) => memory.scope === 'personal' && /sister/i.test(memory.content));
    // Extracted, then forgotten: kept archived, as a /forget after extraction leaves it.
    expect(memories.length).toBeGreaterThan(0);
    expect(memories.filter((memory) => memory.archivedAt === null)).toEqual([]);
  });
}

describe('a /forget after the message it names, on SQLite', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack23b-forget-'));
  afterAll(() => {
    rmSync(folder, { recursive: true, force: true });
  });
  forgetAfterItsMessage(
    async (name) => join(folder, `${name}.db`),
    () => folder,
  );
});

describe.skipIf(!hasPostgresBinaries)('a /forget after the message it names, on PostgreSQL (postgresql-15)', () => {
  let server: TestPostgresServer;
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack23b-forget-'));
  beforeAll(async () => {
    server = await startTestPostgresServer();
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(folder, { recursive: true, force: true });
  });
  forgetAfterItsMessage(
    (name) => server.database(name),
    () => folder,
  );
});
