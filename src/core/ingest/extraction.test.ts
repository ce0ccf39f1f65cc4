import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../../config/create-mneme.js';
import { createSqliteStorage } from '../../storage/sqlite/sqlite-storage.js';
import { createFixedClock } from '../../testing.js';
import { ExtractionTask, topicKey } from './extraction-task.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-extraction-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const start = Date.parse('2024-06-15T12:00:00.000Z');
const silent = { warn: () => {}, info: () => {} };

describe('extraction beside another process', () => {
  it('leaves the automatic extraction of a topic another process holds to it, and waits for it when asked', async () => {
    const path = join(folder, 'topic.db');
    const mneme = await createMneme({ path, clock: createFixedClock(start), logger: silent });
    const other = createSqliteStorage({ path });
    const theirs = {
      channelId: topicKey('trip'),
      task: ExtractionTask.conversation,
      owner: 'another process',
      ttlMs: 60_000,
    };
    try {
      expect(await other.extraction.claim(theirs)).toBe(true);
      for (let index = 0; index < 10; index++) {
        await mneme.ingest({
          channelId: 'room',
          sender: 'oz',
          topicId: 'trip',
          content: `I collect vintage postcards from city number ${index}`,
          createdAt: start + index * 60_000,
        });
      }
      await mneme.whenIdle();
      const scopes = async () => (await mneme.list({ limit: 100 })).memories.map((memory) => memory.scope);
      expect(await scopes()).toContain('personal');
      expect(await scopes()).not.toContain('session');

      let finished = false;
      const extracting = mneme.extract('trip').then((report) => {
        finished = true;
        return report;
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(finished).toBe(false);
      await other.extraction.release(theirs);

      expect(await extracting).toMatchObject({ topicId: 'trip', messages: 10 });
      expect(await scopes()).toContain('session');
    } finally {
      await mneme.close();
      await other.close();
    }
  });
});
