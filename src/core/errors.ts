/** The closed set of error codes every face maps to its own signal (HTTP status, MCP error, exit code). */
export const ErrorCode = {
  InvalidInput: 'INVALID_INPUT',
  NotFound: 'NOT_FOUND',
  Forbidden: 'FORBIDDEN',
  Conflict: 'CONFLICT',
  StoreFailed: 'STORE_FAILED',
  StoreBusy: 'STORE_BUSY',
  StoreIncompatible: 'STORE_INCOMPATIBLE',
  ModelFailed: 'MODEL_FAILED',
  ConfigInvalid: 'CONFIG_INVALID',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** One invalid field of an input: where it is and what is wrong with it. */
export interface FieldIssue {
  path: string;
  message: string;
}

/** The one error class mneme throws. `code` is stable; `message` says what to do. */
export class MnemeError extends Error {
  override readonly name = 'MnemeError';
  readonly code: ErrorCode;
  readonly issues: readonly FieldIssue[];
  /**
   * What the call would have returned, when it committed its writes before it failed (an ingest whose audience check
   * failed after its append): the HTTP face stores it as the answer to the request's Idempotency-Key, so the retry the
   * error asks for is answered with it rather than done again.
   */
  readonly committed: unknown;

  constructor(
    code: ErrorCode,
    message: string,
    options: { cause?: unknown; issues?: readonly FieldIssue[]; committed?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.issues = options.issues ?? [];
    this.committed = options.committed;
  }
}

/**
 * `work`'s result mapped by `as`; a MnemeError of it that carries what it committed is thrown again with that mapped
 * the same way (a face that answers an engine call's result in another shape).
 */
export async function committedAs<T, U>(work: Promise<T>, as: (result: T) => U): Promise<U> {
  try {
    return as(await work);
  } catch (error) {
    if (!(error instanceof MnemeError) || error.committed === undefined) throw error;
    throw new MnemeError(error.code, error.message, {
      cause: error.cause,
      issues: error.issues,
      committed: as(error.committed as T),
    });
  }
}

/** True when `error` is a MnemeError, optionally of the given code. */
export function isMnemeError(error: unknown, code?: ErrorCode): error is MnemeError {
  return error instanceof MnemeError && (code === undefined || error.code === code);
}

/**
 * The message of anything thrown: an Error's message; for another object its own `message`, else its name and code
 * (PGlite throws `{ name: 'ErrnoError', errno: 44 }`, which as text is "[object Object]"); else the value as text.
 */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null) {
    const { message, name, code, errno } = error as Record<string, unknown>;
    if (typeof message === 'string' && message !== '') return message;
    const said = [name, code, errno === undefined ? undefined : `errno ${String(errno)}`].filter(
      (part) => (typeof part === 'string' && part !== '') || typeof part === 'number',
    );
    if (said.length > 0) return said.join(' ');
  }
  return String(error);
}
