import { closeSync, mkdirSync, openSync, realpathSync, type Stats, statSync } from 'node:fs';
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
 * A store holds every user's memories and messages, so what mneme creates for one is its owner's alone: folders
 * 0700, the SQLite file and an export 0600 (SQLite gives the -wal and -shm the database file's mode). What
 * already exists keeps the mode it has (`accessByOthers` tells a service about it).
 */
export const PRIVATE_FOLDER_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Makes `folder` and its missing parents (each only its owner's: `PRIVATE_FOLDER_MODE`), one level at a
 * time, for a database file: the SQLite adapter before it opens one, and the CLI's check of `--db` before
 * anything opens it. Not `mkdirSync(folder,
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
      mkdirSync(made, { mode: PRIVATE_FOLDER_MODE });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST' && existing(made)?.isDirectory()) continue;
      throw failed(
        `cannot create the folder ${made} (${(error as NodeJS.ErrnoException).code ?? errorMessage(error)})`,
        error,
      );
    }
  }
}

/**
 * Creates `path` as an empty file only its owner may read and write (an empty file is a new SQLite database), unless
 * something is there already. Any failure is left to the opener that follows, which reports it in its own words.
 */
export function createPrivateFile(path: string): void {
  try {
    closeSync(openSync(path, 'wx', PRIVATE_FILE_MODE));
  } catch {
    // There already, or not creatable here: the opener says which.
  }
}

/**
 * Whether other accounts of this machine can read a local store (a SQLite file, or a PGlite folder, whose files have
 * well-known names): null when not (or when that cannot be told: Windows, or nothing there), else a sentence saying
 * so and how to fix it. A class of users (the file's group, everyone else) reaches it when the file gives that class
 * read access (a folder: search access) and every folder above it gives that class search access. A link is followed:
 * the folders above the store itself decide, and the chmod named is the store's, quoted for the shell where needed.
 */
export function accessByOthers(path: string, kind: 'file' | 'folder'): string | null {
  if (process.platform === 'win32') return null;
  // The folders that decide are those above the store itself, not above a link to it.
  let target: string;
  let entry: Stats;
  try {
    target = realpathSync(resolve(path));
    entry = statSync(target);
  } catch {
    return null;
  }
  const opened = kind === 'file' ? 0o044 : 0o011;
  // Bit 0o040/0o010 stands for the group, 0o004/0o001 for everyone else; a folder above without search access for a
  // class closes the store to it.
  let group = (entry.mode & opened & 0o070) !== 0;
  let others = (entry.mode & opened & 0o007) !== 0;
  for (let folder = dirname(target); group || others; folder = dirname(folder)) {
    try {
      const mode = statSync(folder).mode;
      group &&= (mode & 0o010) !== 0;
      others &&= (mode & 0o001) !== 0;
    } catch {
      return null;
    }
    if (dirname(folder) === folder) break;
  }
  if (!group && !others) return null;
  const who = others ? 'every account on this machine' : 'the accounts of its group';
  const mode = (entry.mode & 0o777).toString(8).padStart(3, '0');
  const named = shellWord(target);
  const fix =
    kind === 'file'
      ? `chmod 600 ${named} and its -wal and -shm, or chmod 700 the folder it is in`
      : `chmod 700 ${named}`;
  return `${path} can be read by ${who} (mode ${mode}): it holds every user's memories and messages; ${fix}`;
}

/** A path as a shell reads it back: as it is when it holds no character the shell treats apart, else in single quotes. */
function shellWord(path: string): string {
  return /^[\w./@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}
