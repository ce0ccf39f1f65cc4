import { z } from 'zod';
import { ErrorCode, type FieldIssue, isMnemeError } from '../core/errors.js';

/** HTTP status for each error code; a new code does not compile until it is mapped here. */
export const statusOfCode: Record<ErrorCode, number> = {
  [ErrorCode.InvalidInput]: 422,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.Forbidden]: 403,
  [ErrorCode.Conflict]: 409,
  [ErrorCode.StoreBusy]: 503,
  [ErrorCode.StoreFailed]: 500,
  [ErrorCode.StoreIncompatible]: 500,
  [ErrorCode.ModelFailed]: 502,
  [ErrorCode.ConfigInvalid]: 500,
};

const titles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/** An RFC 9457 problem document, plus mneme's error `code` and the invalid fields: every error the API answers. */
export const ProblemSchema = z
  .strictObject({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string().describe('INVALID_INPUT, NOT_FOUND, FORBIDDEN, UNAUTHORIZED, ...'),
    errors: z
      .array(z.strictObject({ path: z.string(), message: z.string() }))
      .exactOptional()
      .describe('The invalid fields of an INVALID_INPUT problem'),
  })
  .meta({ id: 'Problem', description: 'An RFC 9457 problem document (application/problem+json)' });
export type Problem = z.output<typeof ProblemSchema>;

/** A problem raised by the HTTP face itself (authentication, body size, malformed JSON). */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The reason phrase of an HTTP status, as problem documents title it. */
export function titleOf(status: number): string {
  return titles[status] ?? 'Error';
}

export function problem(status: number, code: string, detail: string, errors?: readonly FieldIssue[]): Problem {
  return {
    type: `https://mneme.dev/problems/${code.toLowerCase().replaceAll('_', '-')}`,
    title: titleOf(status),
    status,
    detail,
    code,
    ...(errors && errors.length > 0 ? { errors: [...errors] } : {}),
  };
}

/** The problem document and headers for any error; never a stack trace. */
export function problemOf(error: unknown): { body: Problem; headers: Record<string, string> } {
  if (error instanceof HttpProblem) {
    return { body: problem(error.status, error.code, error.message), headers: error.headers };
  }
  if (isMnemeError(error)) {
    const status = statusOfCode[error.code];
    const headers: Record<string, string> = error.code === ErrorCode.StoreBusy ? { 'Retry-After': '1' } : {};
    return { body: problem(status, error.code, error.message, error.issues), headers };
  }
  return {
    body: problem(500, 'INTERNAL', 'mneme hit an unexpected error; the server log has the details'),
    headers: {},
  };
}
