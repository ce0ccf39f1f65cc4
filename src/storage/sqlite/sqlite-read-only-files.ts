import { accessSync, constants, existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Why this process may not write a database file, and what to do about it. */
export interface ReadOnlyFiles {
  /** Which file or folder, and why: `the file is on a read-only file system (a read-only mount)`, ... */
  reason: string;
  /** What makes it writable. */
  fix: string;
  /** True when it is a read-only mount (which stops root too). */
  mount: boolean;
}

/**
 * Null when this process may write the database file at `path`, its -wal and -shm, and (when SQLite has one of them
 * to create) its folder; else which of them it may not and why: not writable by the user the process runs as
 * (`chmod 444`, another owner; root writes whatever the mode, as SQLite does for it), or on a read-only file system.
 * A path that does not exist yet is left to the folder check of whoever creates it. Only `access` calls, no open.
 */
export function readOnlyFiles(path: string): ReadOnlyFiles | null {
  const file = resolve(path);
  const folder = dirname(file);
  const present = [file, `${file}-wal`, `${file}-shm`].filter((candidate) => existsSync(candidate));
  // SQLite creates the file, or the -wal and -shm of a file closed cleanly, in its folder.
  const checked = present.length < 3 && existsSync(folder) ? [...present, folder] : present;
  for (const candidate of checked) {
    try {
      accessSync(candidate, constants.W_OK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EROFS' && code !== 'EACCES' && code !== 'EPERM') continue;
      const what = candidate === folder ? `its folder ${folder}` : candidate === file ? 'the file' : candidate;
      if (code === 'EROFS') {
        return {
          reason: `${what} is on a read-only file system (a read-only mount)`,
          fix: 'mount it read-write, or copy the file (with its -wal) somewhere writable and open the copy',
          mount: true,
        };
      }
      const user = process.getuid ? ` (uid ${process.getuid()})` : '';
      return {
        reason: `${what} is read-only to the user mneme runs as${user}`,
        fix: 'give that user write access to the file, its -wal and -shm and its folder (chmod u+w, chown), or copy it somewhere writable and open the copy',
        mount: false,
      };
    }
  }
  return null;
}
