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

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; issues?: readonly FieldIssue[] } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.issues = options.issues ?? [];
  }
}

/** True when `error` is a MnemeError, optionally of the given code. */
export function isMnemeError(error: unknown, code?: ErrorCode): error is MnemeError {
  return error instanceof MnemeError && (code === undefined || error.code === code);
}

/** The message of anything thrown: an Error's message, or the value as text. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
