import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteDatabase, WAL_SIZE_LIMIT_BYTES } from './sqlite-database.js';
import { createSqliteMessageStore } from './sqlite-message-store.js';
import { createSqliteVectorIndex } from './sqlite-vector-index.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-sqlite-wal-size-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const say = (content: string) => ({
  channelId: 'desk',
  senderId: 'ann',
  role: 'user' as const,
  topicId: null,
  createdAt: Date.UTC(2026, 11, 4),
  content,
});

describe('the write-ahead log of a database that stays open', () => {
  it('is cut back to the size limit once a checkpoint has copied a large write into the file', async () => {
    const path = join(folder, 'grown.db');
    const database = openSqliteDatabase({ path });
    try {
      const messages = createSqliteMessageStore(database, createSqliteVectorIndex(database));
      // One transaction larger than the limit (an import, a large batch): the log must hold all of it at once.
      const large = Array.from({ length: 400 }, (_, index) =>
        say(`message ${index} ${'the words of a long message said at the desk '.repeat(600)}`),
      );
      await messages.append(large);
      expect(statSync(`${path}-wal`).size).toBeGreaterThan(WAL_SIZE_LIMIT_BYTES);
      // SQLite's automatic checkpoint after that commit copied the log into the file; the next write starts the log
      // again from its beginning, and cuts the file back when it commits.
      await messages.append([say('a short message after the import')]);
      expect(statSync(`${path}-wal`).size).toBeLessThanOrEqual(WAL_SIZE_LIMIT_BYTES);
      expect(database.prepare('SELECT COUNT(*) FROM messages').pluck().get()).toBe(401);
    } finally {
      database.close();
    }
  });
});
