import Database from 'better-sqlite3';

/**
 * Another connection to the SQLite file at `path`, holding its write lock (`BEGIN IMMEDIATE`) until
 * `release`: what another process writing to the same file looks like to mneme.
 */
export function holdWriteLock(path: string): { release(): void } {
  const other = new Database(path);
  other.exec('BEGIN IMMEDIATE');
  return {
    release() {
      other.exec('ROLLBACK');
      other.close();
    },
  };
}
