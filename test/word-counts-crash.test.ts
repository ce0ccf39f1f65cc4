import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { wordCountDifferences } from '../src/storage/sqlite/sqlite-word-counts.fixture.js';
import { crashTest } from './kill-mid-write.js';

const { folder, built, isBuilt, killMidWrite } = crashTest('word-counts-crash');

/**
 * A process that ingests messages in `ingestMany` batches through the built library as fast as it can
 * (the offline extractor turns most into facts: batched extraction inserts them, their words counted
 * by the insert), plain ASCII and not, and prints a line after each batch is appended.
 */
const writer = `
  const { createMneme } = await import(${JSON.stringify(built('index.js'))});
  const mneme = await createMneme({ path: process.argv[1], embedder: 'none' });
  const round = Number(process.argv[2]);
  const said = [
    'I live in Oslo and I love hiking with my dog Rex',
    'I moved to Tromsø last week, the café by the fjord is great',
    'My sister works at Initech and she prefers tea over coffee',
    'Our team always deploys on Tuesday after the standup',
    'I am allergic to peanuts and I never eat Ærøskøbing cheese',
    'We switched the database to PostgreSQL for the reports',
  ];
  for (let batch = 0; ; batch++) {
    const inputs = [];
    for (let index = 0; index < 20; index++) {
      const n = batch * 20 + index;
      inputs.push({
        channelId: 'room-' + (n % 3),
        sender: 'user-' + (n % 5),
        content: said[n % said.length] + ' (note ' + round + '.' + n + ')',
      });
    }
    await mneme.ingestMany(inputs);
    process.stdout.write('appended\\n');
  }
`;

describe('the word counts after kill -9 in the middle of batched extraction', () => {
  it('equal a recount after each crash, and after the extraction resumes, edits, forgets, restores and a purge', async () => {
    expect(isBuilt(), 'run `npm run build` first').toBe(true);
    const path = join(folder, 'crash.db');
    const recount = () => {
      const database = new Database(path);
      try {
        return wordCountDifferences(database);
      } finally {
        database.close();
      }
    };
    for (let round = 0; round < 3; round++) {
      await killMidWrite(writer, path, round, 3 + 2 * round);
      expect(recount(), `after kill ${round + 1}`).toEqual([]);
    }
    const mneme = await createMneme({ path, embedder: 'none' });
    try {
      await mneme.whenIdle();
      const { memories } = await mneme.list({ limit: 50 });
      expect(memories.length).toBeGreaterThan(10);
      expect(recount()).toEqual([]);
      const [first, second, third] = memories;
      await mneme.update({ id: first?.id ?? 0, content: 'Rex now sleeps in the café' });
      await mneme.forget(second?.id ?? 0);
      await mneme.forget(third?.id ?? 0);
      await mneme.restore(third?.id ?? 0);
      await mneme.purgeUser('user-1');
      expect(recount()).toEqual([]);
    } finally {
      await mneme.close();
    }
  }, 120_000);
});
