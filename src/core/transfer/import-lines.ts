import { ErrorCode, errorMessage, isMnemeError, MnemeError } from '../errors.js';

/** Where an import reads from: `mneme` (an export of this format, the default) or `mem0`. */
export type ImportSource = 'mneme' | 'mem0';

export interface ImportOptions {
  from?: ImportSource;
}

/** What one import wrote. */
export interface ImportReport {
  from: ImportSource;
  /** The user a per-user export was of, or null. */
  user: string | null;
  users: number;
  projects: number;
  topics: number;
  channels: number;
  memberships: number;
  messages: number;
  memories: number;
  versions: number;
  links: number;
  /** Records of how far `mneme ingest` got in a file (a full export's), so `--resume` continues where the source had got. */
  ingestFiles: number;
  /**
   * Idempotency keys whose work the source had done (a full export's, ADR 37): a retry under one is answered CONFLICT
   * ("done before"), not done again.
   */
  idempotencyKeys: number;
  /** mem0 memories whose id an earlier import brought in already (or the file named twice): not imported again. */
  duplicates: number;
  /**
   * Whether the file came from a database that required API keys, so this one requires one too: its HTTP
   * service answers no request until `mneme keys create` makes a key (keys are not exported).
   */
  apiKeysRequired: boolean;
}

/** A line's text and its number in the file (1-based, blank lines counted). */
export interface NumberedLine {
  number: number;
  text: string;
}

/** The lines of `source` with their numbers, blank ones and a UTF-8 byte-order mark skipped. */
export async function* numberedLines(source: AsyncIterable<string> | Iterable<string>): AsyncGenerator<NumberedLine> {
  let number = 0;
  for await (const line of source) {
    number++;
    const text = number === 1 ? line.replace(/^\uFEFF/, '') : line;
    if (text.trim() !== '') yield { number, text };
  }
}

/** INVALID_INPUT naming the line (a store failure keeps its code). */
export function lineError(number: number | string, error: unknown): MnemeError {
  const where = typeof number === 'number' ? `line ${number}` : number;
  if (isMnemeError(error) && error.code !== ErrorCode.InvalidInput) {
    return new MnemeError(error.code, `${where}: ${error.message}`, { cause: error });
  }
  const message = isMnemeError(error)
    ? error.message.replace(/^invalid record: /, '')
    : error instanceof SyntaxError
      ? `not JSON (${error.message})`
      : errorMessage(error);
  return new MnemeError(ErrorCode.InvalidInput, `${where}: ${message}; nothing was imported`, { cause: error });
}

/** A report with nothing written yet. */
export function emptyReport(from: ImportSource, user: string | null): ImportReport {
  return {
    from,
    user,
    users: 0,
    projects: 0,
    topics: 0,
    channels: 0,
    memberships: 0,
    messages: 0,
    memories: 0,
    versions: 0,
    links: 0,
    ingestFiles: 0,
    idempotencyKeys: 0,
    duplicates: 0,
    apiKeysRequired: false,
  };
}
