import { ErrorCode, errorMessage, MnemeError } from '../core/errors.js';

/** Waits, or rejects with the signal's reason when it aborts first. Tests inject one that records and returns. */
export type Sleep = (milliseconds: number, signal?: AbortSignal) => Promise<void>;

/** How a provider adapter talks HTTP: every field has a default. */
export interface ProviderHttpOptions {
  /** Longest wait for one attempt (connect, answer and body), in milliseconds. */
  timeoutMs?: number;
  /** Further attempts after a 408, 429, 5xx, timeout or network error; 2 by default. */
  maxRetries?: number;
  /** Longest `Retry-After` honoured; a server asking for more fails at once. 60 s by default. */
  maxRetryAfterMs?: number;
  /**
   * Largest answer read, in bytes; a longer one is cut off and fails at once (MODEL_FAILED). 64 MB by default: a
   * batch of 96 vectors of 3,072 dimensions is about 6 MB of JSON.
   */
  maxResponseBytes?: number;
  /** Waits between attempts; replace it in tests. */
  sleep?: Sleep;
  /** The fetch to use; the global one by default. */
  fetch?: typeof fetch;
}

/** What a ProviderClient needs to know to talk to one server and to explain its failures. */
export interface ProviderClientOptions extends ProviderHttpOptions {
  /** Named in error messages: `Ollama`, `the OpenAI-compatible server`. */
  provider: string;
  /** Everything before the request path, without a trailing slash. */
  baseUrl: string;
  headers?: Record<string, string>;
  /** What the user should do when the server cannot be reached: `start it or set MNEME_EMBEDDER=none`. */
  unreachableHint: string;
  /** Advice for a failed status, given the server's own error message (e.g. `run ollama pull x` on 404). */
  statusHint?: (status: number, serverMessage: string) => string | undefined;
}

/** Per-call options: the caller's abort signal and a timeout override (detection uses a short one). */
export interface RequestOptions {
  signal?: AbortSignal | undefined;
  timeoutMs?: number;
  maxRetries?: number;
}

/** JSON over HTTP with timeouts, retries with backoff, abort and errors that say what to fix. */
export interface ProviderClient {
  /** The base URL as messages show it (without a trailing slash). */
  readonly baseUrl: string;
  getJson(path: string, options?: RequestOptions): Promise<unknown>;
  postJson(path: string, body: unknown, options?: RequestOptions): Promise<unknown>;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_RETRIES = 2;
const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;
const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
const FIRST_BACKOFF_MS = 500;
const LONGEST_BACKOFF_MS = 8_000;
const RETRIED_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);

/** The real sleep: a timer that an abort signal cancels. */
export const realSleep: Sleep = (milliseconds, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, milliseconds);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** The wait before retry number `retry` (0-based): 0.5 s, 1 s, 2 s, ... at most 8 s. */
export function backoffDelay(retry: number): number {
  return Math.min(LONGEST_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** retry);
}

/**
 * The wait a `Retry-After` header asks for, in milliseconds: delta-seconds or an HTTP date.
 * Undefined when the header is missing or unreadable.
 */
export function retryAfterDelay(header: string | null, now: number = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The cause of a provider's MODEL_FAILED when it answered an error status (`MnemeError.cause`), so a caller can tell a
 * refusal of one request's input from a failure of the provider: see {@link refusesInput}.
 */
export class ProviderStatus extends Error {
  override readonly name = 'ProviderStatus';
  constructor(readonly status: number) {
    super(`the provider answered ${status}`);
  }
}

/** The statuses by which a provider refuses the request's input, not the caller: too long, or not processable. */
const INPUT_REFUSED_STATUSES = new Set([400, 413, 422]);

/**
 * Whether `error` is a provider's refusal of the request's input (400, 413, 422: longer than the model's context, a
 * content policy): the same input is refused again, where an outage (5xx, a timeout), a refused key (401, 403) or a
 * missing model (404) fails every input until someone acts, and the input should wait for that.
 */
export function refusesInput(error: unknown): boolean {
  return (
    error instanceof MnemeError &&
    error.cause instanceof ProviderStatus &&
    INPUT_REFUSED_STATUSES.has(error.cause.status)
  );
}

/** Why one attempt failed, and whether another attempt may help. */
type AttemptFailure =
  | { kind: 'network'; code: string }
  | { kind: 'timeout' }
  | { kind: 'status'; status: number; serverMessage: string; retryAfterMs: number | undefined }
  | { kind: 'not-json'; sample: string }
  | { kind: 'too-large'; bytes: number }
  | { kind: 'redirect'; status: number; location: string };

/**
 * Whether a URL names a user or a password (`http://user:secret@host`): fetch refuses such a URL, and every
 * message naming the server would show the password.
 */
export function hasCredentials(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '';
  } catch {
    return /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(url.trim());
  }
}

/** Whether a URL has a query string or a fragment, which a base URL cannot have (the request path goes after it). */
export function hasQuery(url: string): boolean {
  return /[?#]/.test(url);
}

/** A URL as a message may show it: a user name and password in it replaced by `***`, a query string or fragment left out. */
export function withoutCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1***@').replace(/[?#].*$/s, '');
}

/**
 * The secrets among a client's headers (`Authorization: Bearer <key>`, a proxy's key): the values, and the
 * token after a scheme word, of 8 characters or more.
 */
function headerSecrets(headers: Record<string, string> | undefined): string[] {
  const secrets = new Set<string>();
  for (const value of Object.values(headers ?? {})) {
    const token = value.trim();
    if (token.length >= 8) secrets.add(token);
    const afterScheme = /^\S+\s+(\S.*)$/.exec(token)?.[1]?.trim();
    if (afterScheme && afterScheme.length >= 8) secrets.add(afterScheme);
  }
  return [...secrets].sort((a, b) => b.length - a.length);
}

/**
 * Creates a client for one provider server; adapters share it for every request they make. A base URL with a user
 * name or password is refused (CONFIG_INVALID): fetch would refuse every request, and messages would show it. The
 * client's header values (the API key) never appear in its errors, even when the server's answer quotes them.
 */
export function createProviderClient(options: ProviderClientOptions): ProviderClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  if (hasCredentials(baseUrl)) {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `the URL of ${options.provider} (${withoutCredentials(baseUrl)}) holds a user name or password, which mneme does not send; remove them from the URL and give the key as the API key setting`,
    );
  }
  if (hasQuery(baseUrl)) {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `the URL of ${options.provider} (${withoutCredentials(baseUrl)}) is a base URL: leave out the query string and fragment (a key goes in the API key setting)`,
    );
  }
  const secrets = headerSecrets(options.headers);
  const redacted = (text: string) => secrets.reduce((result, secret) => result.replaceAll(secret, '***'), text);
  const doFetch = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? realSleep;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;

  async function attempt(
    method: 'GET' | 'POST',
    path: string,
    body: unknown,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<{ value: unknown } | AttemptFailure> {
    const controller = new AbortController();
    let isTimedOut = false;
    const timer = setTimeout(() => {
      isTimedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const response = await doFetch(`${baseUrl}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        },
        body: body === undefined ? null : JSON.stringify(body),
        signal: controller.signal,
        // A redirect would send what is embedded or summarised (messages, memories) to an address nobody configured.
        redirect: 'manual',
      });
      if (response.status >= 300 && response.status < 400 && response.status !== 304) {
        await response.body?.cancel().catch(() => {});
        return { kind: 'redirect', status: response.status, location: response.headers.get('location') ?? '' };
      }
      const text = await readText(response, maxResponseBytes);
      if (text === null) {
        controller.abort();
        return { kind: 'too-large', bytes: maxResponseBytes };
      }
      if (!response.ok) {
        return {
          kind: 'status',
          status: response.status,
          serverMessage: serverErrorMessage(text),
          retryAfterMs: retryAfterDelay(response.headers.get('retry-after')),
        };
      }
      try {
        return { value: JSON.parse(text) as unknown };
      } catch {
        return { kind: 'not-json', sample: text.slice(0, 120) };
      }
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (isTimedOut) return { kind: 'timeout' };
      return { kind: 'network', code: networkErrorCode(error) };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** The error of a failed request, without the client's secrets. */
  function failure(method: string, path: string, failed: AttemptFailure, attempts: number, timeoutMs: number) {
    const error = describedFailure(method, path, failed, attempts, timeoutMs);
    return new MnemeError(error.code, redacted(error.message), error.cause === undefined ? {} : { cause: error.cause });
  }

  function describedFailure(
    method: string,
    path: string,
    failed: AttemptFailure,
    attempts: number,
    timeoutMs: number,
  ): MnemeError {
    const request = `${method} ${path}`;
    const tries = attempts > 1 ? ` (after ${attempts} attempts)` : '';
    switch (failed.kind) {
      case 'network':
        return new MnemeError(
          ErrorCode.ModelFailed,
          `${options.provider} is not reachable at ${baseUrl}; ${options.unreachableHint} (${failed.code}${tries})`,
        );
      case 'timeout':
        return new MnemeError(
          ErrorCode.ModelFailed,
          `${options.provider} at ${baseUrl} did not answer ${request} within ${formatDuration(timeoutMs)}${tries}; it may still be loading the model: try again, or raise the timeout`,
        );
      case 'not-json':
        return new MnemeError(
          ErrorCode.ModelFailed,
          `${options.provider} at ${baseUrl} answered ${request} with something that is not JSON (${JSON.stringify(failed.sample)}); check that the URL points at the right server`,
        );
      case 'too-large':
        return new MnemeError(
          ErrorCode.ModelFailed,
          `${options.provider} at ${baseUrl} answered ${request} with more than ${formatBytes(failed.bytes)}, more than any answer should be; check that the URL points at the right server`,
        );
      case 'redirect':
        return new MnemeError(
          ErrorCode.ModelFailed,
          `${options.provider} at ${baseUrl} answered ${request} with a redirect (${failed.status}${failed.location ? ` to ${failed.location}` : ''}), which mneme does not follow: it would send the text to an address nobody configured; set the URL to the address it redirects to`,
        );
      case 'status': {
        const hint = options.statusHint?.(failed.status, failed.serverMessage);
        const said = failed.serverMessage ? `: ${failed.serverMessage}` : '';
        return new MnemeError(
          ErrorCode.ModelFailed,
          `${options.provider} at ${baseUrl} answered ${failed.status} to ${request}${said}${tries}${hint ? `; ${hint}` : ''}`,
          { cause: new ProviderStatus(failed.status) },
        );
      }
    }
  }

  async function request(method: 'GET' | 'POST', path: string, body: unknown, requestOptions: RequestOptions = {}) {
    const { signal } = requestOptions;
    const timeoutMs = requestOptions.timeoutMs ?? options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const maxRetries = requestOptions.maxRetries ?? options.maxRetries ?? DEFAULT_MAX_RETRIES;
    for (let attempts = 1; ; attempts++) {
      if (signal?.aborted) throw signal.reason;
      const result = await attempt(method, path, body, timeoutMs, signal);
      if ('value' in result) return result.value;
      const isRetryable =
        result.kind === 'network' ||
        result.kind === 'timeout' ||
        (result.kind === 'status' && RETRIED_STATUSES.has(result.status));
      if (!isRetryable || attempts > maxRetries) throw failure(method, path, result, attempts, timeoutMs);
      let delay = backoffDelay(attempts - 1);
      if (result.kind === 'status' && result.retryAfterMs !== undefined) {
        if (result.retryAfterMs > maxRetryAfterMs) {
          throw new MnemeError(
            ErrorCode.ModelFailed,
            redacted(
              `${options.provider} at ${baseUrl} answered ${result.status} to ${method} ${path} and asks to wait ${formatDuration(result.retryAfterMs)} before trying again; try later${result.serverMessage ? ` (${result.serverMessage})` : ''}`,
            ),
          );
        }
        delay = result.retryAfterMs;
      }
      await sleep(delay, signal);
    }
  }

  return {
    baseUrl,
    getJson: (path, requestOptions) => request('GET', path, undefined, requestOptions),
    postJson: (path, body, requestOptions) => request('POST', path, body, requestOptions),
  };
}

/** The body as text, read up to `maxBytes`; null when it is longer (the rest is not read). */
async function readText(response: Response, maxBytes: number): Promise<string | null> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    bytes += value.byteLength;
    if (bytes > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    text += decoder.decode(value, { stream: true });
  }
}

function formatBytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${Math.round(bytes / (1024 * 1024))} MB` : `${bytes} bytes`;
}

/** The longest part of a server's error text an error quotes. */
const SERVER_MESSAGE_CHARS = 200;

/**
 * The error text a provider put in its body: Ollama's `{error}`, OpenAI's `{error: {message}}`, or the text itself;
 * its first 200 characters (a server's error page or message may go on for megabytes, and each warning quotes it).
 */
function serverErrorMessage(text: string): string {
  let message = text.trim();
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown } | null;
    if (typeof body?.error === 'string') message = body.error;
    else if (body?.error && typeof body.error === 'object' && 'message' in body.error) {
      message = String((body.error as { message: unknown }).message);
    } else if (typeof body?.message === 'string') message = body.message;
  } catch {
    // not JSON: use the text
  }
  return message.length > SERVER_MESSAGE_CHARS ? `${message.slice(0, SERVER_MESSAGE_CHARS)}...` : message;
}

function networkErrorCode(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return errorMessage(error);
}

function formatDuration(milliseconds: number): string {
  return milliseconds >= 1000 ? `${Math.round(milliseconds / 100) / 10} s` : `${Math.round(milliseconds)} ms`;
}
