import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeTransferStoreContract } from '../transfer-store.contract.js';
import { openSqliteDatabase } from './sqlite-database.js';
import { createSqliteStorage } from './sqlite-storage.js';
import { createSqliteTransferStore } from './sqlite-transfer-store.js';

describeTransferStoreContract('SQLite :memory:', async () => createSqliteStorage({ path: ':memory:' }));
// A file's snapshot is a second, read-only connection (an in-memory database's, a copy of it).
describeTransferStoreContract('SQLite file', async () =>
  createSqliteStorage({ path: join(mkdtempSync(join(tmpdir(), 'mneme-transfer-')), 'mneme.db') }),
);

describe('the SQLite import', () => {
  it('gives the connection its own page cache back after an import commits or rolls back', async () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const transfer = createSqliteTransferStore(database);
      const before = database.pragma('cache_size', { simple: true });
      const committed = await transfer.beginImport();
      expect(database.pragma('cache_size', { simple: true })).not.toBe(before);
      await committed.commit();
      expect(database.pragma('cache_size', { simple: true })).toBe(before);
      const rolledBack = await transfer.beginImport();
      await rolledBack.rollback();
      expect(database.pragma('cache_size', { simple: true })).toBe(before);
    } finally {
      database.close();
    }
  });
});
