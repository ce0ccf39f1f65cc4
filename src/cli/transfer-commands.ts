import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, readFileSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { isDatabaseUrl } from '../config/open-storage.js';
import { ErrorCode, errorMessage, MnemeError } from '../core/errors.js';
import type { ImportReport, ImportSource } from '../core/transfer/import-lines.js';
import { PRIVATE_FILE_MODE } from '../storage/make-folders.js';
import type { WithEngine } from './cli-io.js';
import { fileSize, readLines, UnreadableLineError } from './ingest-commands.js';

/** What `mneme export` and `mneme import` need besides the engine. */
export interface TransferIo {
  /** Where `mneme export` without `--out` writes, with back-pressure; the text `stdout` function when left out. */
  stdoutStream?: NodeJS.WritableStream;
  stdout: (text: string) => void;
  /** Read by `mneme import -`; process.stdin when left out. */
  stdin?: NodeJS.ReadableStream;
}

/** What `mneme export --out` did. */
export interface ExportSummary {
  file: string;
  lines: number;
}

/** A path as the file system resolves it: symbolic links followed where the file exists. */
function resolvedPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * INVALID_INPUT when `--out` names the SQLite database the command runs on, or one of its journal files:
 * the export, renamed into place, would replace the database.
 */
function refuseDatabaseAsOut(out: string, database: string): void {
  if (isDatabaseUrl(database) || database === ':memory:') return;
  const target = resolvedPath(out);
  const file = resolvedPath(database);
  if ([file, `${file}-wal`, `${file}-shm`, `${file}-journal`].includes(target)) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `--out names the database ${database} (${target}): the export would replace it; give another file`,
    );
  }
}

/** Bytes gathered before one write: fewer, larger writes. */
const CHUNK_BYTES = 64 * 1024;

/** The version of this mneme, from its package.json (two folders above `dist/cli/`). */
function mnemeVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof manifest.version === 'string' ? manifest.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Writes the lines, each with its newline, waiting for the stream to drain; returns how many. */
async function writeLines(lines: AsyncIterable<string>, write: (text: string) => unknown) {
  let count = 0;
  let chunk = '';
  for await (const line of lines) {
    count++;
    chunk += `${line}\n`;
    if (chunk.length >= CHUNK_BYTES) {
      await write(chunk);
      chunk = '';
    }
  }
  if (chunk !== '') await write(chunk);
  return count;
}

function toStream(stream: NodeJS.WritableStream) {
  return async (text: string) => {
    if (!stream.write(text)) await once(stream, 'drain');
  };
}

/**
 * Writes the lines to standard output; a reader that stops early (`mneme export | head`) ends the
 * export quietly instead of failing it. Any other failure to write (a full disk under a redirected
 * output) fails it, also one that only the last write met: each write's callback says whether it was
 * written, and the export ends once the last one has.
 */
async function writeToPipe(lines: AsyncIterable<string>, stream: NodeJS.WritableStream): Promise<void> {
  let broken: unknown = null;
  const onError = (error: unknown) => {
    broken ??= error;
  };
  stream.on('error', onError);
  let written: Promise<void> = Promise.resolve();
  try {
    await writeLines(lines, async (text) => {
      if (broken) throw broken;
      let drained = true;
      written = new Promise((done) => {
        drained = stream.write(text, (error) => {
          if (error) onError(error);
          done();
        });
      });
      if (!drained) await once(stream, 'drain');
    });
    await written;
    if (broken) throw broken;
  } catch (error) {
    if ((error as NodeJS.ErrnoException | null)?.code === 'EPIPE') return;
    throw error instanceof MnemeError
      ? error
      : new MnemeError(
          ErrorCode.InvalidInput,
          `cannot write the export to standard output: ${errorMessage(error)}; what was written is incomplete (it has no end line)`,
          { cause: error },
        );
  } finally {
    stream.off('error', onError);
  }
}

/**
 * `mneme export [--user <id>] [--format jsonl] [--out <file>]` and `mneme import <file|-> [--from mneme|mem0]`
 * (docs/export-format.md).
 */
export function registerTransferCommands(
  program: Command,
  withEngine: WithEngine,
  io: TransferIo,
  databasePath: () => string,
): void {
  program
    .command('export')
    .description('write the database, or what one user may see and said, as JSON lines (docs/export-format.md)')
    .option('--user <id>', "only this user's data (a data-subject access request)")
    .addOption(new Option('--format <format>', 'the export format').choices(['jsonl']).default('jsonl'))
    .option('--out <file>', 'write to this file (replaced once the export is complete) instead of standard output')
    .action(
      withEngine(
        async (mneme, options: { user?: string; out?: string }) => {
          const lines = mneme.exportData({
            ...(options.user === undefined ? {} : { userId: options.user }),
            mnemeVersion: mnemeVersion(),
          });
          if (options.out !== undefined) refuseDatabaseAsOut(options.out, databasePath());
          if (options.out === undefined) {
            if (io.stdoutStream) await writeToPipe(lines, io.stdoutStream);
            else await writeLines(lines, (text) => io.stdout(text));
            return undefined;
          }
          // Written next to the target and renamed at the end, so a failed export leaves no partial file.
          // A name of its own, created exclusively: two exports to one file at once never write into one
          // temporary file (the first to finish would rename what the other still writes into).
          const partial = `${options.out}.${process.pid}-${randomBytes(6).toString('hex')}.partial`;
          const stream = createWriteStream(partial, { flags: 'wx', mode: PRIVATE_FILE_MODE });
          try {
            await once(stream, 'open');
            const count = await writeLines(lines, toStream(stream));
            stream.end();
            await once(stream, 'finish');
            renameSync(partial, options.out);
            return { file: options.out, lines: count } satisfies ExportSummary;
          } catch (error) {
            stream.destroy();
            rmSync(partial, { force: true });
            throw error instanceof MnemeError
              ? error
              : new MnemeError(ErrorCode.InvalidInput, `cannot write ${options.out}: ${errorMessage(error)}`, {
                  cause: error,
                });
          }
        },
        (summary: ExportSummary | undefined) => (summary ? `exported ${summary.lines} lines to ${summary.file}` : ''),
      ),
    );

  program
    .command('import')
    .description('restore an export into an empty database, or add a mem0 export (docs/export-format.md)')
    .argument('<file>', 'the export (.jsonl; a mem0 export: .json or .jsonl), or - to read standard input')
    .addOption(new Option('--from <format>', 'what the file is').choices(['mneme', 'mem0']).default('mneme'))
    .action(
      withEngine(
        async (mneme, file: string, options: { from: ImportSource }) => {
          if (file !== '-') fileSize(file);
          const input = file === '-' ? (io.stdin ?? process.stdin) : createReadStream(file);
          return mneme.importData(readLines(input, file), { from: options.from }).catch((error: unknown) => {
            // An import is all or nothing: the lines before an unreadable line were not kept either.
            if (error instanceof UnreadableLineError) {
              throw new MnemeError(error.code, `${error.message}; nothing was imported`);
            }
            throw error;
          });
        },
        (report: ImportReport) =>
          `imported ${report.users} users, ${report.projects} projects, ${report.topics} topics, ${report.channels} channels, ` +
          `${report.memberships} memberships, ${report.messages} messages, ${report.memories} memories ` +
          `(${report.versions} versions), ${report.links} links` +
          (report.ingestFiles > 0
            ? `; how far mneme ingest got in ${report.ingestFiles} file${report.ingestFiles === 1 ? '' : 's'} (mneme ingest --resume continues there)`
            : '') +
          (report.idempotencyKeys > 0
            ? `; ${report.idempotencyKeys} idempotency key${report.idempotencyKeys === 1 ? '' : 's'} whose requests were done (a retry under one is not done again)`
            : '') +
          (report.duplicates > 0 ? `; ${report.duplicates} mem0 memories were imported before and skipped` : '') +
          (report.memories > 0 ? '; memories have no vectors yet: run `mneme reembed` with an embedding model' : '') +
          (report.apiKeysRequired
            ? '; the exported database required API keys, so this one does: `mneme keys create` makes one (keys are not exported)'
            : ''),
      ),
    );
}
