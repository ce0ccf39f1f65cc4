import { createReadStream, type Stats, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { ErrorCode, errorMessage, isMnemeError, MnemeError } from '../core/errors.js';
import type { IngestResult } from '../core/ingest/ingest.js';
import {
  type IngestExchangeInput,
  IngestExchangeInputSchema,
  type IngestInput,
  IngestInputSchema,
  parseInput,
} from '../core/schemas.js';
import type { WithEngine } from './cli-io.js';

/** What `mneme ingest` needs besides the engine: where progress goes and, for `-`, where lines come from. */
export interface IngestIo {
  stderr: (text: string) => void;
  /** Read for `mneme ingest -`; process.stdin when left out. */
  stdin?: NodeJS.ReadableStream;
}

/** What one `mneme ingest` run did. */
export interface IngestSummary {
  lines: number;
  messages: number;
  exchanges: number;
  commands: number;
  /** Jobs the full extraction queue dropped; their messages were extracted by the catch-up pass. */
  droppedJobs: number;
  /** Active memories after the run minus before it. */
  newMemories: number;
  seconds: number;
  messagesPerSecond: number;
}

/** A progress bar on stderr, redrawn at most every 200 ms. */
function createProgress(write: (text: string) => void, totalBytes: number | null) {
  let last = 0;
  return {
    update(lines: number, bytes: number, force = false) {
      const now = Date.now();
      if (!force && now - last < 200) return;
      last = now;
      if (totalBytes && totalBytes > 0) {
        const share = Math.min(1, bytes / totalBytes);
        const filled = Math.round(share * 30);
        write(`\r[${'#'.repeat(filled)}${'.'.repeat(30 - filled)}] ${Math.round(share * 100)}%  ${lines} lines`);
      } else {
        write(`\r${lines} lines`);
      }
    },
    done() {
      write('\n');
    },
  };
}

/** Lines appended in one transaction. */
const BATCH_LINES = 500;

/** One checked line, with its number for the errors that name it. */
interface IngestLine {
  number: number;
  input: IngestInput | IngestExchangeInput;
}

/** Errors about what one line says (not about the store), for which the lines before it are written one at a time. */
const lineErrorCodes: ReadonlySet<string> = new Set([
  ErrorCode.InvalidInput,
  ErrorCode.NotFound,
  ErrorCode.Forbidden,
  ErrorCode.Conflict,
]);

/** Validates one parsed line with the shared schemas: an exchange when it has `userMessage`, else a message. */
function checkLine(value: unknown): IngestInput | IngestExchangeInput {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new MnemeError(ErrorCode.InvalidInput, 'expected a JSON object (a message or an exchange)');
  }
  if ('userMessage' in value) {
    parseInput(IngestExchangeInputSchema, value, 'exchange');
    return value as IngestExchangeInput;
  }
  parseInput(IngestInputSchema, value, 'message');
  return value as IngestInput;
}

/**
 * `mneme ingest <file.jsonl|->`: one JSON object a line, a message (`channelId`, `sender`,
 * `content`, optional `role`, `senderName`, `topicId`, `createdAt`) or an exchange (`channelId`,
 * `userId`, `userMessage`, `assistantReply`, optional `userName`, `topicId`, `createdAt`). Blank
 * lines and a UTF-8 byte-order mark are skipped. A malformed line, or one the engine refuses (a
 * `replyTo` that names no message of its channel), stops the run with its line number (exit 2);
 * nothing of that line is written, the lines before it are kept. Waits for extraction before it exits.
 */
export function registerIngestCommands(program: Command, withEngine: WithEngine, io: IngestIo): void {
  program
    .command('ingest')
    .description('append messages or exchanges from a JSON-lines file (- for stdin) and extract memories')
    .argument('<file>', 'a .jsonl file, or - to read standard input')
    .option('--progress', 'always show the progress bar (default: only when stderr is a terminal)')
    .option('--no-progress', 'never show the progress bar')
    .action(
      withEngine(
        async (mneme, file: string, options: { progress?: boolean }) => {
          const started = Date.now();
          const fromStdin = file === '-';
          const totalBytes = fromStdin ? null : fileSize(file);
          const input = fromStdin ? (io.stdin ?? process.stdin) : createReadStream(file);
          const showProgress = options.progress ?? process.stderr.isTTY === true;
          const progress = showProgress ? createProgress(io.stderr, totalBytes) : null;
          const before = (await mneme.stats()).active;
          const summary = { lines: 0, messages: 0, exchanges: 0, commands: 0, droppedJobs: 0 };
          let bytes = 0;
          let batch: IngestLine[] = [];
          const count = (results: IngestResult[]) => {
            for (const result of results) {
              summary.messages += result.messages.length;
              if (result.messages.length === 2) summary.exchanges++;
              if (result.command) summary.commands++;
              if (!result.queued) summary.droppedJobs++;
            }
          };
          const flush = async () => {
            const lines = batch;
            batch = [];
            if (lines.length === 0) return;
            try {
              count(await mneme.ingestMany(lines.map((line) => line.input)));
            } catch (error) {
              if (!isMnemeError(error) || !lineErrorCodes.has(error.code)) {
                throw new MnemeError(
                  isMnemeError(error) ? error.code : ErrorCode.StoreFailed,
                  `lines ${lines[0]?.number}-${lines.at(-1)?.number}: ${errorMessage(error)}`,
                  { cause: error },
                );
              }
              // The engine refused one line before writing any: keep the lines before it, one at a time.
              for (const line of lines) {
                try {
                  count([
                    'userMessage' in line.input
                      ? await mneme.ingestExchange(line.input)
                      : await mneme.ingest(line.input),
                  ]);
                } catch (lineFailure) {
                  throw lineError(line.number, lineFailure);
                }
              }
            }
          };
          try {
            for await (const line of readLines(input, file)) {
              summary.lines++;
              bytes += Buffer.byteLength(line) + 1;
              const text = summary.lines === 1 ? line.replace(/^\uFEFF/, '') : line;
              if (text.trim() === '') continue;
              let checked: IngestInput | IngestExchangeInput;
              try {
                checked = checkLine(JSON.parse(text));
              } catch (error) {
                await flush();
                throw lineError(summary.lines, error);
              }
              batch.push({ number: summary.lines, input: checked });
              if (batch.length >= BATCH_LINES) await flush();
              progress?.update(summary.lines, bytes);
            }
            await flush();
            progress?.update(summary.lines, totalBytes ?? bytes, true);
          } finally {
            progress?.done();
            if (progress) io.stderr('extracting memories...\n');
            await mneme.whenIdle();
          }
          const seconds = (Date.now() - started) / 1000;
          return {
            ...summary,
            newMemories: (await mneme.stats()).active - before,
            seconds,
            messagesPerSecond: seconds > 0 ? Math.round(summary.messages / seconds) : summary.messages,
          } satisfies IngestSummary;
        },
        (summary) =>
          `ingested ${summary.messages} messages (${summary.exchanges} exchanges, ${summary.commands} commands) from ${summary.lines} lines; ` +
          `${summary.newMemories} new memories; ${summary.seconds.toFixed(1)} s, ${summary.messagesPerSecond} messages/s`,
      ),
    );
}

/** The size of the file to read: NOT_FOUND when it does not exist, INVALID_INPUT when it is not a regular file. */
export function fileSize(file: string): number {
  let stats: Stats;
  try {
    stats = statSync(file);
  } catch (error) {
    throw new MnemeError(ErrorCode.NotFound, `cannot read ${file}: check the path, or use - to read standard input`, {
      cause: error,
    });
  }
  if (!stats.isFile()) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `${file} is ${stats.isDirectory() ? 'a folder' : 'not a regular file'}: give a .jsonl file, or - to read standard input`,
    );
  }
  return stats.size;
}

/** The lines of `input`; a read error (permissions, a device) becomes INVALID_INPUT naming the file. */
export async function* readLines(input: NodeJS.ReadableStream, file: string): AsyncGenerator<string> {
  try {
    yield* createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  } catch (error) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `cannot read ${file === '-' ? 'standard input' : file}: ${errorMessage(error)}`,
      {
        cause: error,
      },
    );
  }
}

function lineError(lineNumber: number, error: unknown): MnemeError {
  if (error instanceof SyntaxError) {
    return new MnemeError(
      ErrorCode.InvalidInput,
      `line ${lineNumber}: not valid JSON (${error.message}); nothing of this line was written, the lines before it were`,
    );
  }
  if (isMnemeError(error)) {
    return new MnemeError(
      error.code,
      `line ${lineNumber}: ${error.message}; nothing of this line was written, the lines before it were`,
      { cause: error, issues: error.issues },
    );
  }
  return new MnemeError(ErrorCode.StoreFailed, `line ${lineNumber}: ${errorMessage(error)}`, { cause: error });
}
