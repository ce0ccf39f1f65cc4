import { mkdirSync, type Stats, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ErrorCode, errorMessage, MnemeError } from '../core/errors.js';

/**
 * The file or folder at `path`, or null when there is none. Any other failure to look is thrown as
 * `refuse` makes it, with the reason (`a part of its path is a file, not a folder`, or the system's words).
 */
export function entryAt(path: string, refuse: (reason: string, cause: unknown) => Error): Stats | null {
  try {
    return statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw refuse(code === 'ENOTDIR' ? 'a part of its path is a file, not a folder' : errorMessage(error), error);
  }
}

/**
 * Makes `folder` and its missing parents, one level at a time, for a database file: the SQLite adapter
 * before it opens one, and the CLI's check of `--db` before anything opens it. Not `mkdirSync(folder,
 * { recursive: true })`: on Node 20 that never returns where a level cannot be created under an existing
 * parent (under /proc). A level another process made meanwhile is no error. STORE_FAILED says why not: a
 * part of the path is a file, or which level could not be created (with its error code).
 */
export function makeFolders(folder: string): void {
  const target = resolve(folder);
  const failed = (reason: string, cause?: unknown) => new MnemeError(ErrorCode.StoreFailed, reason, { cause });
  const existing = (level: string) =>
    entryAt(level, (reason, cause) => failed(`cannot create the folder ${target}: ${reason}`, cause));
  const missing: string[] = [];
  let level = target;
  let found = existing(level);
  while (!found && dirname(level) !== level) {
    missing.unshift(level);
    level = dirname(level);
    found = existing(level);
  }
  if (found && !found.isDirectory()) throw failed(`${level} is not a folder`);
  for (const made of missing) {
    try {
      mkdirSync(made);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST' && existing(made)?.isDirectory()) continue;
      throw failed(
        `cannot create the folder ${made} (${(error as NodeJS.ErrnoException).code ?? errorMessage(error)})`,
        error,
      );
    }
  }
}
