import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { openStorage } from '../src/config/open-storage.js';
import type { Storage } from '../src/storage/storage.js';

/**
 * Writes rows through the storage port, below the engine's checks: what a database from before a rule may hold (a
 * user under one of mneme's own ids, ADR 38), so that a test can show such a database keeps working. The database
 * must not be open elsewhere in the process (a PGlite folder opens once).
 */
export async function writeBelowTheEngine(path: string, write: (storage: Storage) => Promise<void>): Promise<void> {
  const storage = await openStorage({ path });
  try {
    await write(storage);
  } finally {
    await storage.close();
  }
}

/** Stores an API key bound to `userId` as the engine would have before the rule, and returns it. */
export async function insertUserKey(storage: Storage, userId: string, label: string, at: number): Promise<string> {
  const prefix = randomBytes(6).toString('hex');
  const key = `mneme_${prefix}_${randomBytes(24).toString('base64url')}`;
  await storage.apiKeys.insert({ prefix, hash: createHash('sha256').update(key).digest('hex'), label, userId }, at);
  return key;
}

/** The two stores a test of stored data runs on: a SQLite file and a PGlite folder, each `name` in `folder`. */
export function storesIn(folder: string) {
  return [
    ['SQLite', (name: string) => join(folder, `${name}.db`)],
    ['PGlite', (name: string) => `pglite:${join(folder, name)}`],
  ] as const;
}
