import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../../config/create-mneme.js';
import type { HeldLock } from '../storage.js';
import { createSqliteStorage } from './sqlite-storage.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-sqlite-locks-'));
let files = 0;
const newFile = () => join(folder, `store-${files++}.db`);
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** The built storage module: a child process opens the file as another mneme process would. */
const builtStorage = pathToFileURL(resolve(import.meta.dirname, '../../../dist/storage/sqlite/sqlite-storage.js')).href;

describe('SQLite named locks (Storage.tryLock) across connections and processes', () => {
  it('gives a lock to one storage at a time, keeps it while held past its lease, frees it on release and on close', async () => {
    const path = newFile();
    const first = createSqliteStorage({ path, lockTtlMs: 1_500 });
    const second = createSqliteStorage({ path, lockTtlMs: 1_500 });
    try {
      const release = await first.tryLock('maintenance:decay');
      expect(release).not.toBeNull();
      expect(await second.tryLock('maintenance:decay')).toBeNull();
      // Not granted twice to the same storage either (two calls of one process).
      expect(await first.tryLock('maintenance:decay')).toBeNull();
      // Another name is another lock.
      const link = await second.tryLock('maintenance:link');
      expect(link).not.toBeNull();
      // Held past its lease's length: renewed, so still refused to the other.
      await sleep(2_500);
      expect(await second.tryLock('maintenance:decay')).toBeNull();
      await release?.release();
      const taken = await second.tryLock('maintenance:decay');
      expect(taken).not.toBeNull();
      expect(await first.tryLock('maintenance:decay')).toBeNull();
      // Closing a storage frees what it held, at once.
      await second.close();
      expect(await first.tryLock('maintenance:decay')).not.toBeNull();
      expect(await first.tryLock('maintenance:link')).not.toBeNull();
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('names the task whose lock it could not claim while another connection writes', async () => {
    const path = newFile();
    const storage = createSqliteStorage({ path });
    const writer = new Database(path, { timeout: 0 });
    try {
      writer.exec('BEGIN IMMEDIATE');
      await expect(storage.tryLock('maintenance:decay')).rejects.toThrow(
        /^claiming the maintenance:decay task's lease: the database is busy/,
      );
      writer.exec('ROLLBACK');
      expect(await storage.tryLock('maintenance:decay')).not.toBeNull();
    } finally {
      writer.close();
      await storage.close();
    }
  });

  it('frees the lock of a process killed while holding it once its lease expires, not before', async () => {
    const path = newFile();
    await createSqliteStorage({ path }).close();
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { createSqliteStorage } = await import(${JSON.stringify(builtStorage)});
        const storage = createSqliteStorage({ path: process.argv[1], lockTtlMs: 3000 });
        const release = await storage.tryLock('maintenance:consolidate');
        process.stdout.write(release ? 'held\\n' : 'refused\\n');
        setInterval(() => {}, 1000);`,
        path,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const storage = createSqliteStorage({ path });
    try {
      const [line] = (await once(child.stdout, 'data')) as [Buffer];
      expect(line.toString()).toBe('held\n');
      expect(await storage.tryLock('maintenance:consolidate')).toBeNull();
      child.kill('SIGKILL');
      await once(child, 'exit');
      // Its lease (3 s) has not expired yet: still refused.
      expect(await storage.tryLock('maintenance:consolidate')).toBeNull();
      let release: HeldLock | null = null;
      for (let tries = 0; tries < 100 && !release; tries++) {
        await sleep(100);
        release = await storage.tryLock('maintenance:consolidate');
      }
      expect(release).not.toBeNull();
    } finally {
      child.kill('SIGKILL');
      await storage.close();
    }
  });

  it('makes maintain skip a task another process on the same file is running, and run the others', async () => {
    const path = newFile();
    const mneme = await createMneme({ path });
    const holder = createSqliteStorage({ path });
    try {
      await holder.tryLock('maintenance:decay');
      const report = await mneme.maintain({ tasks: ['decay', 'consolidate'] });
      expect(report.decay?.skipped).toBe('already running in another process on this database');
      expect(report.consolidate?.skipped).toBeNull();
      expect(report.consolidate?.checked).toBe(0);
      await holder.close();
      const after = await mneme.maintain({ tasks: ['decay'] });
      expect(after.decay?.skipped).toBeNull();
    } finally {
      await mneme.close();
      await holder.close();
    }
  });
});
