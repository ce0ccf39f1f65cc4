import { createHash, type Hash } from 'node:crypto';
import { createReadStream, realpathSync, type Stats, statSync } from 'node:fs';
import type { Command } from 'commander';
import { ErrorCode, errorMessage, isMnemeError, MnemeError } from '../core/errors.js';
import type { IngestResult } from '../core/ingest/ingest.js';
import type { MaintenanceStatus } from '../core/inspection.js';
import type { Mneme } from '../core/mneme.js';
import {
  type IngestExchangeInput,
  IngestExchangeInputSchema,
  type IngestInput,
  IngestInputSchema,
  parseInput,
} from '../core/schemas.js';
import type { WithEngine } from './cli-io.js';
import { createProgressBar, progressMode } from './progress-bar.js';

/** What `mneme ingest` needs besides the engine: where progress goes and, for `-`, where lines come from. */
export interface IngestIo {
  stderr: (text: string) => void;
  /** Read for `mneme ingest -`; process.stdin when left out. */
  stdin?: NodeJS.ReadableStream;
}

/** What one `mneme ingest` run did. */
export interface IngestSummary {
  /** Lines read by this run (after the resumed line, with `--resume`). */
  lines: number;
  /** With `--resume`: the last line an earlier run committed, which this run continued after (0: from the start). */
  resumedAfter: number;
  /** Messages appended. */
  messages: number;
  /** Messages already stored under their `externalId`, acknowledged and not appended again. */
  duplicates: number;
  exchanges: number;
  commands: number;
  /** Jobs the full extraction queue dropped; their messages were extracted by the catch-up pass. */
  droppedJobs: number;
  /** Active memories after the run minus before it. */
  newMemories: number;
  seconds: number;
  messagesPerSecond: number;
}

/** Lines appended in one transaction. */
const BATCH_LINES = 500;

/** One checked line, with its number for the errors that name it and the hash of the file up to it. */
interface IngestLine {
  number: number;
  input: IngestInput | IngestExchangeInput;
  prefixSha256: string;
}

/** Errors about what one line says (not about the store), for which the lines before it are written one at a time. */
const lineErrorCodes: ReadonlySet<string> = new Set([
  ErrorCode.InvalidInput,
  ErrorCode.NotFound,
  ErrorCode.Forbidden,
  ErrorCode.Conflict,
]);

/** The CONFLICT of a batch whose file record another run moved (`fileProgressMoved`): not about any one line. */
function isFileProgressMoved(error: unknown): error is MnemeError {
  return isMnemeError(error, ErrorCode.Conflict) && error.issues.some((issue) => issue.path === 'file');
}

/** Validates one parsed line with the shared schemas: an exchange when it has `userMessage`, else a message. */
function checkLine(value: unknown): IngestInput | IngestExchangeInput {
  if (Array.isArray(value)) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      'expected a JSON object (a message or an exchange), not a list: the file holds one object a line (JSON lines)',
    );
  }
  if (typeof value !== 'object' || value === null) {
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
 *
 * A line may carry `externalId` (and an exchange `replyExternalId`): a message its channel already has
 * is acknowledged and counted as a duplicate, not appended. Each batch records, in its own transaction,
 * the file's resolved path, its last line and the SHA-256 of the lines up to it; `--resume` continues
 * after that line, and refuses (CONFLICT) a file whose lines up to it changed.
 */
export function registerIngestCommands(program: Command, withEngine: WithEngine, io: IngestIo): void {
  program
    .command('ingest')
    .description('append messages or exchanges from a JSON-lines file (- for stdin) and extract memories')
    .argument('<file>', 'a .jsonl file, or - to read standard input')
    .option('--resume', 'continue after the last line an earlier run committed from this file')
    .option('--progress', 'draw the progress bar even when stderr is not a terminal')
    .option('--no-progress', 'no progress bar (default: drawn on a terminal, else one final line on stderr)')
    .action(
      withEngine(
        async (mneme, file: string, options: { progress?: boolean; resume?: boolean }) => {
          const started = Date.now();
          const fromStdin = file === '-';
          if (fromStdin && options.resume) {
            throw new MnemeError(
              ErrorCode.InvalidInput,
              '--resume needs a file: standard input has no lines to continue after',
            );
          }
          const totalBytes = fromStdin ? null : fileSize(file);
          const path = fromStdin ? null : realpathSync(file);
          const recorded = path === null ? null : await mneme.ingestProgress(path);
          const resumeAfter = options.resume ? (recorded?.line ?? 0) : 0;
          if (recorded && !options.resume) {
            io.stderr(
              `note: lines 1-${recorded.line} of ${file} were ingested before; --resume continues after them\n`,
            );
          }
          const input = fromStdin ? (io.stdin ?? process.stdin) : createReadStream(file);
          const mode = progressMode(options.progress);
          let lines = 0;
          const extraction = createExtractionFollower(mneme, started);
          // By bytes of the file when its size is known (standard input: lines read so far), then by the
          // messages extracted; the text says both: lines read, messages appended, extracted, per second.
          const progress = mode.off
            ? null
            : createProgressBar(io.stderr, 'ingesting', {
                interactive: mode.interactive,
                unit: () => `${lines.toLocaleString('en-US')} lines · ${extraction.text(summary.messages)}`,
              });
          const before = (await mneme.stats()).active;
          await extraction.start();
          const summary = {
            lines: 0,
            resumedAfter: resumeAfter,
            messages: 0,
            duplicates: 0,
            exchanges: 0,
            commands: 0,
            droppedJobs: 0,
          };
          // Records of this version hash the lines' bytes under a mark of their own; a version before the
          // UTF-8 check hashed the text it read (U+FFFD for bad bytes), which `legacy` recomputes to resume it.
          const prefix = createHash('sha256').update(PREFIX_MARK);
          const legacy = createHash('sha256');
          const lenientLines = new Map<number, Buffer>();
          let lineNumber = 0;
          let bytes = 0;
          let batch: IngestLine[] = [];
          // The newest message of each channel the run appended (or found already stored), which extraction must pass.
          const newest = new Map<string, number>();
          const count = (results: IngestResult[]) => {
            for (const result of results) {
              for (const message of result.messages) {
                newest.set(message.channelId, Math.max(newest.get(message.channelId) ?? 0, message.id));
              }
              const duplicates = result.messages.filter((message) => message.duplicate).length;
              summary.messages += result.messages.length - duplicates;
              summary.duplicates += duplicates;
              if (result.messages.length === 2 && !result.duplicate) summary.exchanges++;
              if (result.command) summary.commands++;
              if (!result.queued) summary.droppedJobs++;
            }
          };
          // With --resume, the line the file's record holds as far as this run knows: each batch is written
          // only if the record is still there, so two resumed runs of one file at once never both append the
          // same lines. Without it the run ingests the file again from line 1, as asked, whatever the record says.
          let recordedLine = recorded?.line ?? 0;
          const flush = async () => {
            const lines = batch;
            batch = [];
            if (lines.length === 0) return;
            const progressOf = (line: IngestLine | undefined) =>
              path === null || line === undefined
                ? {}
                : {
                    file: {
                      path,
                      line: line.number,
                      prefixSha256: line.prefixSha256,
                      ...(options.resume ? { after: recordedLine } : {}),
                    },
                  };
            const ingestLines = async (some: IngestLine[]) => {
              count(
                await mneme.ingestMany(
                  some.map((line) => line.input),
                  progressOf(some.at(-1)),
                ),
              );
              recordedLine = some.at(-1)?.number ?? recordedLine;
            };
            try {
              await ingestLines(lines);
            } catch (error) {
              if (isFileProgressMoved(error)) {
                throw new MnemeError(
                  ErrorCode.Conflict,
                  `lines ${lines[0]?.number}-${lines.at(-1)?.number}: ${error.message}; run mneme ingest --resume once it has ended`,
                  { cause: error },
                );
              }
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
                  await ingestLines([line]);
                } catch (lineFailure) {
                  if (isFileProgressMoved(lineFailure)) {
                    throw new MnemeError(
                      ErrorCode.Conflict,
                      `line ${line.number}: ${lineFailure.message}; run mneme ingest --resume once it has ended`,
                      { cause: lineFailure },
                    );
                  }
                  throw lineError(line.number, withoutBatchIndex(lineFailure));
                }
              }
            }
          };
          try {
            // The lines an earlier run committed are only hashed to check the file is unchanged; a version
            // before the UTF-8 check read them with U+FFFD for bad bytes, so they are read that way again.
            const read = readLines(input, file, {
              lenientThrough: resumeAfter,
              onLenient: (number, raw) => lenientLines.set(number, raw),
            });
            for await (const line of read) {
              lineNumber++;
              const raw = lenientLines.get(lineNumber) ?? Buffer.from(line);
              lenientLines.delete(lineNumber);
              bytes += raw.length + 1;
              prefix.update(raw).update('\n');
              if (lineNumber <= resumeAfter) {
                legacy.update(`${line}\n`);
                if (lineNumber === resumeAfter) assertUnchanged(file, recorded, [prefix, legacy]);
                continue;
              }
              summary.lines++;
              const text = lineNumber === 1 ? line.replace(/^\uFEFF/, '') : line;
              if (text.trim() === '') continue;
              let checked: IngestInput | IngestExchangeInput;
              try {
                checked = checkLine(JSON.parse(text));
              } catch (error) {
                await flush();
                throw lineError(lineNumber, error);
              }
              batch.push({ number: lineNumber, input: checked, prefixSha256: prefix.copy().digest('hex') });
              if (batch.length >= BATCH_LINES) await flush();
              lines = lineNumber;
              if (mode.interactive) void extraction.poll();
              progress?.update(bytes, totalBytes ?? 0);
            }
            if (lineNumber < resumeAfter) assertUnchanged(file, recorded, []);
            await flush();
            lines = lineNumber;
          } catch (error) {
            // As for a line that is not JSON: the lines before it are kept.
            if (error instanceof UnreadableLineError) await flush();
            progress?.interrupt();
            if (progress && mode.interactive) io.stderr('extracting memories...\n');
            await mneme.whenIdle();
            if (error instanceof UnreadableLineError) {
              throw new MnemeError(
                error.code,
                `${error.message}; nothing of this line was written, the lines before it were`,
              );
            }
            throw error;
          }
          // The append is done; the bar follows the extraction behind it until it is idle.
          const idle = mneme.whenIdle().then(() => true);
          const tick = () => new Promise<boolean>((resolve) => setTimeout(() => resolve(false), POLL_MS).unref());
          while (mode.interactive && progress && !(await Promise.race([idle, tick()]))) {
            await extraction.poll(true);
            progress.update(extraction.extracted(summary.messages), summary.messages);
          }
          await idle;
          await extraction.poll(true);
          progress?.update(extraction.extracted(summary.messages), summary.messages);
          progress?.finish();
          await refuseUnextracted(mneme, newest, summary.messages);
          const seconds = (Date.now() - started) / 1000;
          return {
            ...summary,
            newMemories: (await mneme.stats()).active - before,
            seconds,
            messagesPerSecond: seconds > 0 ? Math.round(summary.messages / seconds) : summary.messages,
          } satisfies IngestSummary;
        },
        (summary) =>
          `ingested ${summary.messages} messages (${summary.exchanges} exchanges, ${summary.commands} commands) from ${summary.lines} lines` +
          (summary.resumedAfter > 0 ? ` after line ${summary.resumedAfter}` : '') +
          (summary.duplicates > 0 ? `, ${summary.duplicates} already stored` : '') +
          '; ' +
          `${summary.newMemories} new memories; ${summary.seconds.toFixed(1)} s, ${summary.messagesPerSecond} messages/s`,
      ),
    );
}

/**
 * STORE_FAILED when extraction, which the run waited for, is not past the newest message the run gave a channel: the
 * worker failed (a full disk, a model that does not answer) and said so on stderr, and said it would try again, which
 * in a command that ends now is the next run's or a server's catch-up pass. The run exited 0 with "0 new memories"
 * and its messages unextracted. Nothing is lost: the lines are committed (`--resume` appends none again).
 */
async function refuseUnextracted(mneme: Mneme, newest: ReadonlyMap<string, number>, appended: number): Promise<void> {
  if (newest.size === 0) return;
  let channels: MaintenanceStatus['extraction'];
  try {
    channels = (await mneme.maintenanceStatus()).extraction;
  } catch {
    // Not for this user to read (--as): the run cannot tell, as before.
    return;
  }
  const watermarks = new Map(channels.map((channel) => [channel.channelId, channel.watermark]));
  const behind = [...newest].filter(([channelId, id]) => (watermarks.get(channelId) ?? 0) < id).map(([id]) => id);
  if (behind.length === 0) return;
  const named =
    behind.length > 3 ? `${behind.slice(0, 3).join(', ')} and ${behind.length - 3} more` : behind.join(', ');
  throw new MnemeError(
    ErrorCode.StoreFailed,
    `the lines were written (${appended} messages appended; mneme ingest --resume appends none of them again), but extracting memories from the messages of channel ${named} failed (the lines above say why); the next mneme ingest or mneme serve on this database extracts them`,
  );
}

/** Milliseconds between two looks at the extraction backlog while the bar is drawn in place. */
const POLL_MS = 500;

/**
 * How far extraction is behind `mneme ingest`: the backlog (messages past the channels' extraction
 * watermarks, `maintenanceStatus`) against the one before the run, and the rate since the run began.
 */
function createExtractionFollower(mneme: Mneme, started: number) {
  let backlogBefore = 0;
  let backlog = 0;
  let appended = 0;
  let polling: Promise<void> | null = null;
  let lastPoll = Number.NEGATIVE_INFINITY;
  const backlogNow = async () =>
    (await mneme.maintenanceStatus()).extraction.reduce((sum, channel) => sum + channel.backlog, 0);
  const extracted = (messages: number) => Math.min(messages, Math.max(0, messages - (backlog - backlogBefore)));
  return {
    async start() {
      backlogBefore = await backlogNow();
      backlog = backlogBefore;
    },
    /** Looks at the backlog again, at most every `POLL_MS` unless `now`; in the background unless awaited. */
    poll(now = false): Promise<void> {
      if (polling || (!now && Date.now() - lastPoll < POLL_MS)) return polling ?? Promise.resolve();
      lastPoll = Date.now();
      polling = backlogNow()
        .then((value) => {
          backlog = value;
        })
        .catch(() => undefined)
        .finally(() => {
          polling = null;
        });
      return polling;
    },
    extracted,
    /** `appended 100,000 · extracted 42,000/100,000 · 850 msg/s` */
    text(messages: number) {
      appended = messages;
      const done = extracted(messages);
      const seconds = (Date.now() - started) / 1000;
      const rate = seconds > 0 ? Math.round(done / seconds) : 0;
      const count = (value: number) => value.toLocaleString('en-US');
      return `appended ${count(appended)} · extracted ${count(done)}/${count(appended)} · ${count(rate)} msg/s`;
    },
  };
}

/** What a record of this version hashes before the lines' bytes, so it is never taken for an older version's. */
const PREFIX_MARK = 'mneme ingest: line bytes\n';

/**
 * CONFLICT unless the file's lines up to the recorded one hash as they did, by one of `hashes` (this
 * version's, an older version's; none: the file ended before the recorded line).
 */
function assertUnchanged(file: string, recorded: { line: number; prefixSha256: string } | null, hashes: Hash[]) {
  if (!recorded || hashes.some((hash) => hash.copy().digest('hex') === recorded.prefixSha256)) return;
  throw new MnemeError(
    ErrorCode.Conflict,
    `${file} changed since an earlier run committed its lines 1-${recorded.line} (${hashes.length === 0 ? 'it is shorter now' : 'they differ now'}); nothing was written. Ingest it without --resume (lines with an externalId are not stored twice), or restore the file`,
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

/** The longest line read: far above any record (a message is at most 32,000 characters), far below V8's longest string. */
const MAX_LINE_BYTES = 64 * 1024 * 1024;

/**
 * A line of an input file the reader refuses before parsing it: not UTF-8 text (a Latin-1 or UTF-16
 * export; never stored altered) or longer than {@link MAX_LINE_BYTES}.
 */
export class UnreadableLineError extends MnemeError {}

/**
 * The lines of a JSON-lines input, each decoded as UTF-8. A line ends at LF, CRLF or a lone CR (as
 * `readline` splits them). A line that is not UTF-8 is refused with its number and where it goes wrong:
 * decoding it anyway would store U+FFFD in place of each bad byte (the HTTP face refuses such a body
 * with 400 for the same reason); so is a line over {@link MAX_LINE_BYTES}. A line up to `lenientThrough`
 * that is not UTF-8 is decoded with U+FFFD for bad bytes, as versions before this check read it, and handed
 * to `onLenient` with its bytes (`--resume` hashes the lines an earlier run committed). A read error
 * (permissions, a device) becomes INVALID_INPUT naming the file.
 */
export async function* readLines(
  input: NodeJS.ReadableStream,
  file: string,
  {
    lenientThrough = 0,
    onLenient,
  }: { lenientThrough?: number; onLenient?: (lineNumber: number, bytes: Buffer) => void } = {},
): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const lenient = new TextDecoder('utf-8', { ignoreBOM: true });
  let lineNumber = 0;
  const decode = (bytes: Buffer): string => {
    lineNumber++;
    try {
      return decoder.decode(bytes);
    } catch {
      if (lineNumber <= lenientThrough) {
        onLenient?.(lineNumber, bytes);
        return lenient.decode(bytes);
      }
      const column = firstInvalidByte(bytes);
      throw new UnreadableLineError(
        ErrorCode.InvalidInput,
        `line ${lineNumber}: not UTF-8 text (byte 0x${(bytes[column] ?? 0).toString(16).padStart(2, '0')} at byte ${column + 1} of the line); save the file as UTF-8`,
      );
    }
  };
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const hold = (bytes: Buffer) => {
    pendingBytes += bytes.length;
    if (pendingBytes > MAX_LINE_BYTES) {
      throw new UnreadableLineError(
        ErrorCode.InvalidInput,
        `line ${lineNumber + 1}: longer than ${MAX_LINE_BYTES / 1024 / 1024} MiB; a line holds one record (is the file JSON lines?)`,
      );
    }
    pending.push(bytes);
  };
  let afterCr = false;
  try {
    for await (const chunk of input) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      let start = 0;
      if (afterCr && bytes[0] === 0x0a) start = 1;
      afterCr = false;
      for (let at = start; at < bytes.length; at++) {
        const byte = bytes[at];
        if (byte !== 0x0a && byte !== 0x0d) continue;
        hold(bytes.subarray(start, at));
        const line = pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending);
        pending = [];
        pendingBytes = 0;
        yield decode(line);
        if (byte === 0x0d) {
          if (at + 1 === bytes.length) afterCr = true;
          else if (bytes[at + 1] === 0x0a) at++;
        }
        start = at + 1;
      }
      if (start < bytes.length) hold(bytes.subarray(start));
    }
  } catch (error) {
    if (isMnemeError(error)) throw error;
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `cannot read ${file === '-' ? 'standard input' : file}: ${errorMessage(error)}`,
      { cause: error },
    );
  }
  if (pending.length > 0) yield decode(Buffer.concat(pending));
}

/**
 * Where a line stops being UTF-8: the index of the first byte that does not begin a well-formed
 * character (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), in one pass.
 */
function firstInvalidByte(bytes: Buffer): number {
  let at = 0;
  while (at < bytes.length) {
    const lead = bytes[at] ?? 0;
    if (lead < 0x80) {
      at++;
      continue;
    }
    const size =
      lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
    if (size === 0) return at;
    const second = bytes[at + 1] ?? 0;
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf;
    if (second < low || second > high) return at;
    for (let next = 2; next < size; next++) {
      const byte = bytes[at + next] ?? 0;
      if (byte < 0x80 || byte > 0xbf) return at;
    }
    at += size;
  }
  return at;
}

/** The error of a one-line `ingestMany` as the line's own: the line number names it, not "at index 0". */
function withoutBatchIndex(error: unknown): unknown {
  if (!isMnemeError(error)) return error;
  const message = error.message.replace(/^(invalid (?:message|exchange)) at index 0:/, '$1:');
  return new MnemeError(error.code, message, { cause: error.cause, issues: error.issues });
}

function lineError(lineNumber: number, error: unknown): MnemeError {
  if (error instanceof SyntaxError) {
    return new MnemeError(
      ErrorCode.InvalidInput,
      `line ${lineNumber}: not valid JSON (${error.message}): each line holds one whole JSON object (JSON lines, ` +
        'not a JSON document spread over lines); nothing of this line was written, the lines before it were',
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
