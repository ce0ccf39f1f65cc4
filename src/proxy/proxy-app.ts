import { createHash, randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import { Hono } from 'hono';
import { z } from 'zod';
import type { Principal } from '../core/access.js';
import { BUSY_RETRY_MS, retryWhileBusy } from '../core/busy-retry.js';
import { ErrorCode, errorMessage, isMnemeError } from '../core/errors.js';
import { checkIdempotencyKey } from '../core/idempotency.js';
import type { Mneme } from '../core/mneme.js';
import {
  ChannelIdSchema,
  clipChars,
  clipQuery,
  fitMessage,
  MAX_ID_CHARS,
  PersonIdSchema,
  parseInput,
} from '../core/schemas.js';
import type { Viewer } from '../core/types.js';
import { channelReadersSee, othersReadChannel, type Standing, standingIn } from '../core/visibility.js';
import { accessLog } from '../http/http-access-log.js';
import { authenticate, readJsonBody, sendProblem } from '../http/http-app.js';
import { createBodyShares } from '../http/http-body-share.js';
import { headerText } from '../http/http-header-text.js';
import { HttpProblem, problem, problemOf } from '../http/http-problem.js';
import {
  type ChatMessage,
  completionText,
  createStreamCollector,
  latestUserText,
  withContextBlock,
} from './chat-messages.js';
import { createSecretRedactor, REDACTED, redacted } from './secret-redactor.js';

export interface ProxyAppOptions {
  mneme: Mneme;
  /** The upstream's base URL, `/v1` included as OpenAI's `baseURL` has it: `http://127.0.0.1:11434/v1`. */
  upstream: string;
  /** Sent upstream as `Authorization: Bearer <key>` (`MNEME_UPSTREAM_API_KEY`); no Authorization when left out. */
  upstreamApiKey?: string;
  /**
   * Sent upstream as `OpenAI-Organization` and `OpenAI-Project` (`MNEME_UPSTREAM_ORGANIZATION`,
   * `MNEME_UPSTREAM_PROJECT`): the account of the upstream key that pays. A client's own are never forwarded.
   */
  upstreamOrganization?: string;
  upstreamProject?: string;
  /** Largest accepted request body in bytes (default 16 MiB: chat requests carry whole conversations and images). */
  maxBodyBytes?: number;
  /** Largest upstream answer that is not a stream, in bytes (default 64 MiB); a larger one is 502. */
  maxAnswerBytes?: number;
  /** One line for each thing mneme could not do (recall, ingest) while the chat went on. */
  log?: (line: string) => void;
  /** Receives one access-log line per request (see `accessLog`); none when left out. */
  accessLog?: (line: string) => void;
}

export interface ProxyApp {
  app: Hono;
  /** Resolves once every exchange handed to ingest so far has been written (or has failed and been logged). */
  whenIdle(): Promise<void>;
}

/** Refusals logged where they were met (or, a busy store, not errors of the proxy): not logged again as unexpected. */
const loggedWhereMet = new Set(['STORE_BUSY', 'UPSTREAM_REDIRECTED', 'UPSTREAM_ANSWER_TOO_LARGE']);

/** The header naming the channel a request's exchange belongs to; `proxy:<userId>` without it. */
export const CHANNEL_HEADER = 'x-mneme-channel';

/**
 * Request headers never sent upstream: the client's credentials, hop-by-hop headers, what fetch sets itself, and
 * those that pick which of the upstream key's organizations and projects pays (the operator's to choose, ADR 18).
 */
const requestHeadersKept = (name: string) =>
  !/^(authorization|proxy-authorization|cookie|host|content-length|connection|keep-alive|transfer-encoding|te|trailer|upgrade|expect|accept-encoding|openai-organization|openai-project|x-mneme-.*|mneme-.*)$/i.test(
    name,
  );

/**
 * Response headers not relayed: hop-by-hop ones, those fetch invalidated by decoding the body, and
 * cookies (the client's are never forwarded, and an upstream's session is the operator's, not a client's).
 */
const responseHeadersKept = (name: string) =>
  !/^(connection|keep-alive|transfer-encoding|content-encoding|content-length|trailer|upgrade|set-cookie)$/i.test(name);

/** Who a chat request is for and where its exchange goes. */
interface Caller {
  principal: Principal;
  userId: string;
  channelId: string;
}

/**
 * The OpenAI-compatible proxy (ADR 18): `POST /v1/chat/completions` and `GET /v1/models`, forwarded to
 * the upstream with its own key. Before a completion it recalls for the request's user with the latest
 * user message and inserts the context block as a system message; once the reply is complete (streamed
 * or not) it ingests the exchange in the background. mneme's own failures never block the chat.
 */
export function createProxyApp(options: ProxyAppOptions): ProxyApp {
  const { mneme } = options;
  const upstream = options.upstream.replace(/\/+$/, '');
  const maxBodyBytes = options.maxBodyBytes ?? 16 * 1024 * 1024;
  const maxAnswerBytes = options.maxAnswerBytes ?? 64 * 1024 * 1024;
  const shares = createBodyShares(maxBodyBytes);
  const log = options.log ?? ((line: string) => console.error(`mneme: ${line}`));
  const pending = new Set<Promise<void>>();
  /** The upstream's key, never relayed to a client: an upstream that echoes it in an error gets it redacted. */
  const secret = options.upstreamApiKey ?? '';
  /**
   * The key as looked for in a 2xx body, where a model's answer is: none when it is a word of letters and hyphens,
   * the placeholder local servers take (`ollama`, `EMPTY`, `lm-studio`, `sk-no-key-required`), which is no secret and
   * may be a word of the answer ("run ollama pull" reaches the client and the memory as it was said). A provider's key
   * is random, with digits.
   */
  const secretInAnswers = /^[A-Za-z-]*$/.test(secret) ? '' : secret;
  const app = new Hono();
  if (options.accessLog) app.use(accessLog(options.accessLog));
  /** This proxy's mark in the `Via` of what it forwards: a request that comes back carrying it went round a loop. */
  const via = `1.1 mneme-proxy-${randomUUID()}`;
  app.use(async (context, next) => {
    if (context.req.header('via')?.includes(via)) {
      throw new HttpProblem(
        508,
        'UPSTREAM_LOOP',
        `the upstream ${upstream} leads back to this mneme proxy, which would forward each request to itself; set --upstream to the model server`,
      );
    }
    await next();
  });

  app.onError((error, context) => {
    const { body, headers } = problemOf(error);
    const clientLeft = context.req.raw.signal.aborted;
    if (body.status >= 500 && !loggedWhereMet.has(body.code) && !clientLeft)
      // An unreachable upstream is an outage to report as such; anything else here was not expected (a redirect
      // and an answer too large were logged where they were met).
      log(
        body.code === 'UPSTREAM_UNREACHABLE' || body.code === 'UPSTREAM_LOOP'
          ? errorMessage(error)
          : `unexpected error: ${errorMessage(error)}`,
      );
    return sendProblem(body.status, body, headers);
  });
  app.notFound((context) =>
    sendProblem(404, problem(404, 'NOT_FOUND', `no route for ${context.req.method} ${context.req.path}`)),
  );

  /** Sends a request upstream: the client's headers minus its credentials, the upstream key added. */
  async function forward(context: Context, path: string, init: { method: string; body?: string }): Promise<Response> {
    const headers = new Headers();
    context.req.raw.headers.forEach((value, name) => {
      if (requestHeadersKept(name)) headers.set(name, value);
    });
    if (init.body !== undefined) headers.set('content-type', 'application/json');
    headers.set('via', headers.has('via') ? `${headers.get('via')}, ${via}` : via);
    if (options.upstreamApiKey) headers.set('authorization', `Bearer ${options.upstreamApiKey}`);
    if (options.upstreamOrganization) headers.set('openai-organization', options.upstreamOrganization);
    if (options.upstreamProject) headers.set('openai-project', options.upstreamProject);
    let answer: Response;
    try {
      answer = await fetch(`${upstream}${path}`, {
        method: init.method,
        headers,
        ...(init.body === undefined ? {} : { body: init.body }),
        signal: context.req.raw.signal,
        // A redirect would send the conversation, with the memories recalled into it, to an address nobody
        // configured (and a 307 keeps the body); the proxy follows none (ADR 18, 2026-12-05).
        redirect: 'manual',
      });
    } catch (error) {
      if (context.req.raw.signal.aborted) throw error;
      throw new HttpProblem(
        502,
        'UPSTREAM_UNREACHABLE',
        `the upstream ${upstream} cannot be reached (${causeOf(error)}); check --upstream and that it is running`,
      );
    }
    if (answer.status >= 300 && answer.status < 400 && answer.status !== 304) {
      await answer.body?.cancel().catch(() => {});
      const location = answer.headers.get('location');
      log(
        `the upstream ${upstream} answered ${init.method} ${path} with ${answer.status}, a redirect${location ? ` to ${secret ? location.replaceAll(secret, REDACTED) : location}` : ''}; it was not followed`,
      );
      throw new HttpProblem(
        502,
        'UPSTREAM_REDIRECTED',
        `the upstream ${upstream} answered with a redirect (${answer.status}), which mneme proxy does not follow: it would send the conversation and the memories recalled into it to an address nobody configured; set --upstream to the address the upstream redirects to`,
      );
    }
    return answer;
  }

  /** Runs an ingest in the background, logging its failure; `whenIdle` waits for it. */
  function inBackground(work: () => Promise<unknown>, what: string): void {
    // The client has its reply and cannot send the exchange again: a database held busy is waited for (ADR 18), the
    // key and the membership read again at each attempt (they are part of `work`).
    const waits = (error: unknown) =>
      log(`${what} waits: ${errorMessage(error)}; it is tried again for up to ${BUSY_RETRY_MS / 1000} s`);
    const done: Promise<void> = retryWhileBusy(work, waits)
      .then(() => undefined)
      .catch((error: unknown) => log(`${what} failed: ${errorMessage(error)}`))
      .finally(() => pending.delete(done));
    pending.add(done);
  }

  app.get('/v1/models', async (context) => {
    await authenticate(context, mneme.apiKeys, false);
    const answer = await forward(context, '/models', { method: 'GET' });
    const bytes = redacted(await wholeAnswer(answer), answer.ok ? secretInAnswers : secret);
    return relayWhole(answer, bytes, secret);
  });

  app.post('/v1/chat/completions', async (context) => {
    const early = await authenticate(context, mneme.apiKeys, false);
    const body = await readJsonBody(context, maxBodyBytes, { shares, principal: early });
    // The body may arrive minutes after the headers: a key revoked meanwhile neither recalls nor forwards.
    const principal = await authenticate(context, mneme.apiKeys, false);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new HttpProblem(400, 'INVALID_CHAT_REQUEST', 'the body must be a JSON object (a chat completion request)');
    }
    const request = body as Record<string, unknown>;
    const messages = request.messages;
    if (!Array.isArray(messages) || messages.some((message) => typeof message !== 'object' || message === null)) {
      throw new HttpProblem(400, 'INVALID_CHAT_REQUEST', 'messages must be a list of message objects');
    }
    const caller = whoCalls(context, principal, request.user);
    // Text that holds a lone surrogate (JSON's "\ud800") could be neither recalled for nor recorded: refused, not
    // forwarded and then silently left out of memory.
    const userText = parseField<string>(z.string(), latestUserText(messages as ChatMessage[]), 'latest user message');
    const retryId = exchangeIdOf(context.req.header('idempotency-key'), userText);
    // A later step of a tool loop ends with tool results, not the user: it recalls without reinforcing again.
    const userSpokeLast = (messages.at(-1) as ChatMessage | undefined)?.role === 'user';
    const memory = await prepare(caller, userText, !userSpokeLast);
    // The upstream may count or limit use by the `user` field (OpenAI's abuse monitoring, a gateway's
    // budgets): a user key's request names its own user there, never one the client chose.
    const named = principal.kind === 'user' && request.user !== undefined ? { user: caller.userId } : {};
    const sent = {
      ...request,
      ...named,
      ...(memory.block ? { messages: withContextBlock(messages, memory.block) } : {}),
    };
    const answer = await forward(context, '/chat/completions', { method: 'POST', body: JSON.stringify(sent) });
    const ingest = (reply: string) => {
      if (!memory.viewer || !reply.trim()) return;
      inBackground(async () => {
        // A stream can last minutes: a key revoked meanwhile writes nothing, and a user key removed
        // from the channel may not post there, so the key and the membership are read again before
        // the write.
        await authenticate(context, mneme.apiKeys, false);
        const { viewer: checked, standing } = await viewerOf(caller);
        // An administrator key may make the user a member of a channel they are not in, but not again of one they were
        // removed from while the reply came, nor of one declared meanwhile without them: as for a user key, the change
        // made while the reply came stays (ADR 18, attack 32d).
        if (standing === 'outsider' && memory.standing !== 'outsider') {
          log(
            memory.standing === 'member'
              ? `the exchange of user ${caller.userId} was not recorded: ${caller.userId} is no longer a member of channel ${caller.channelId}, removed while the reply came`
              : `the exchange of user ${caller.userId} was not recorded: channel ${caller.channelId} was declared without ${caller.userId} while the reply came`,
          );
          return;
        }
        // A reply built on what the channel's readers may not see (the caller's personal memories) is written only
        // where no one else reads: a channel that gained another reader while the reply came (a member added, made
        // public) does not get it (ADR 47).
        if (memory.beyondChannel && checked.userId === undefined) {
          log(
            `the exchange of user ${caller.userId} was not recorded: channel ${caller.channelId} gained another reader while the reply, built on the user's personal memories, came`,
          );
          return;
        }
        // A user who is a member writes no membership with it: a removal from now on stays. One whose channel does not
        // exist (a user key's own default channel, or any an administrator key names) starts it, and it must still not
        // exist when the exchange is appended (an administrator who declared it meanwhile, without the user, is not
        // overruled). Only an administrator key makes a user a member of a channel they are not in.
        const member = standing === 'member';
        const starts = standing === 'absent';
        // The key is checked once more in the append's transaction, as for POST /api/exchanges: a key revoked (or its
        // user purged) between the check above and the append writes nothing.
        const { keyId } = caller.principal;
        return mneme.ingestExchange(
          {
            channelId: caller.channelId,
            userId: caller.userId,
            // A turn longer than a message can hold keeps its start and its end rather than lose the exchange.
            userMessage: fitMessage(userText),
            assistantReply: fitMessage(reply),
            ...(retryId ? { externalId: retryId } : {}),
          },
          {
            sendersAreMembers: member,
            joinsOnlyNewSpaces: starts,
            ...(keyId === undefined ? {} : { keyId }),
          },
        );
      }, `ingesting the exchange of user ${caller.userId} in channel ${caller.channelId}`);
    };
    if (answer.ok && answer.body && /^text\/event-stream\b/i.test(answer.headers.get('content-type') ?? '')) {
      return relayStream(context, answer, answer.body, caller, ingest);
    }
    // The upstream's key is neither relayed nor recorded, in a 2xx answer too (a gateway's debugging echo).
    const bytes = redacted(await wholeAnswer(answer), answer.ok ? secretInAnswers : secret);
    if (answer.ok) ingest(completionText(parseJson(bytes)));
    return relayWhole(answer, bytes, secret);
  });

  /**
   * The context block for the caller (or '' when nothing is recalled), the viewer its exchange is ingested
   * for (null: it is not ingested, as when the request has no user text), and whether the block holds a
   * memory the channel's other readers may not see (one of the caller's personal memories). A user key must be a member of the channel it names; its own
   * `proxy:<userId>` channel it may start. Refusals are 403; any other failure of mneme is logged and the
   * chat goes on without memory.
   */
  async function prepare(
    caller: Caller,
    query: string,
    inspect: boolean,
  ): Promise<{ block: string; viewer: Viewer | null; standing: Standing; beyondChannel: boolean }> {
    let viewer: Viewer;
    let standing: Standing;
    try {
      ({ viewer, standing } = await viewerOf(caller));
    } catch (error) {
      if (error instanceof HttpProblem) throw error;
      log(`forwarding without memory for user ${caller.userId}: checking the channel failed: ${errorMessage(error)}`);
      return { block: '', viewer: null, standing: 'absent', beyondChannel: false };
    }
    if (!query) return { block: '', viewer: null, standing, beyondChannel: false };
    try {
      // A viewer without the user (a channel others read) is the channel's own: membership was checked above.
      const reader = viewer.userId === undefined ? mneme : mneme.as(caller.principal);
      const result = await reader.context({ query: clipQuery(query), viewer, inspect });
      const beyondChannel = result.hits.some(({ memory }) => !channelReadersSee(memory, caller.channelId));
      return { block: result.text, viewer, standing, beyondChannel };
    } catch (error) {
      log(`forwarding without context for user ${caller.userId}: recall failed: ${errorMessage(error)}`);
      return { block: '', viewer, standing, beyondChannel: false };
    }
  }

  /**
   * Whose memories the request may recall: the caller's own and the channel's where no one else reads the
   * channel (the reply is recorded there, and every reader of it would read what the model was shown); only
   * the channel's (and global ones) in a channel another member or everyone reads (ADR 47). With it, where the user
   * stands in the channel, which the write compares with where they stood when the request came.
   */
  async function viewerOf(caller: Caller): Promise<{ viewer: Viewer; standing: Standing }> {
    const { principal, userId, channelId } = caller;
    let channel: { visibility: string; members: readonly string[] } | null = null;
    try {
      channel = await mneme.channel(channelId);
    } catch (error) {
      if (!(isMnemeError(error) && error.code === ErrorCode.NotFound)) throw error;
    }
    const othersRead = othersReadChannel(channel, userId);
    const standing = standingIn(channel, userId);
    if (principal.kind === 'admin') return { viewer: othersRead ? { channelId } : { userId, channelId }, standing };
    if (channel === null && channelId === defaultChannel(userId)) return { viewer: { userId }, standing };
    if (standing === 'member') return { viewer: othersRead ? { channelId } : { userId, channelId }, standing };
    throw new HttpProblem(
      403,
      'FORBIDDEN',
      `user ${userId} is not a member of channel ${channelId}; an administrator adds members, or leave out the X-Mneme-Channel header to use ${defaultChannel(userId)}`,
    );
  }

  /**
   * Relays a stream's events as they arrive; the exchange is ingested once the stream ended with a whole
   * final reply, not when the client left, nor when the upstream broke off or reported an error.
   */
  function relayStream(
    context: Context,
    answer: Response,
    source: ReadableStream<Uint8Array>,
    caller: Caller,
    ingest: (reply: string) => void,
  ) {
    const collector = createStreamCollector();
    // A stream's `error` event (OpenAI's report of a failure once the headers are sent) is an error body too: the
    // upstream's key is redacted in it, as in every event, before the client and the collector read them.
    const redactor = createSecretRedactor(secretInAnswers);
    const reader = source.getReader();
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        // A chunk held back whole (it may end with the start of the key) is followed by the next before pull returns.
        for (;;) {
          if (await relayNext(controller)) return;
        }
      },
      async cancel(reason) {
        await reader.cancel(reason).catch(() => {});
      },
    });
    /** Relays the upstream's next chunk; false when all of it was held back. */
    async function relayNext(controller: ReadableStreamDefaultController<Uint8Array>): Promise<boolean> {
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (error) {
        if (context.req.raw.signal.aborted) {
          controller.error(error);
          return true;
        }
        // The headers are sent: the client learns of it the way OpenAI reports a failure mid-stream.
        const why = `the upstream's stream broke off: ${causeOf(error)}; the reply is incomplete`;
        log(`the upstream's stream broke off for user ${caller.userId}: ${causeOf(error)}; nothing was ingested`);
        controller.enqueue(
          new TextEncoder().encode(
            `data: ${JSON.stringify({ error: { message: why, type: 'upstream_error', code: 'UPSTREAM_BROKE_OFF' } })}\n\n`,
          ),
        );
        controller.close();
        return true;
      }
      const bytes = next.done ? redactor.end() : redactor.push(next.value);
      if (bytes.byteLength > 0) {
        collector.push(bytes);
        controller.enqueue(bytes);
      }
      if (next.done) {
        controller.close();
        if (collector.complete()) ingest(collector.text());
        return true;
      }
      return bytes.byteLength > 0;
    }
    return new Response(stream, { status: answer.status, headers: relayedHeaders(answer.headers, secret) });
  }

  /**
   * An answer that is not a stream, read whole to relay it (and read its reply) up to `maxAnswerBytes`: past
   * that the upstream is cancelled and the client gets 502 problem+json, nothing recorded.
   */
  async function wholeAnswer(answer: Response): Promise<Uint8Array> {
    if (!answer.body) return new Uint8Array();
    const reader = answer.body.getReader();
    const parts: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      size += next.value.byteLength;
      if (size > maxAnswerBytes) {
        await reader.cancel().catch(() => {});
        log(`the upstream's answer passed ${maxAnswerBytes} bytes; it was not relayed`);
        throw new HttpProblem(
          502,
          'UPSTREAM_ANSWER_TOO_LARGE',
          `the upstream's answer is larger than the ${maxAnswerBytes} bytes mneme proxy reads of one answer that is not a stream; nothing was recorded`,
        );
      }
      parts.push(next.value);
    }
    return Buffer.concat(parts);
  }

  return {
    app,
    async whenIdle() {
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}

/** Who the request is for: a user key's user, or (administrator key) the body's `user` field; and its channel. */
function whoCalls(context: Context, principal: Principal, user: unknown): Caller {
  let userId: string;
  if (principal.kind === 'user') userId = principal.userId;
  else if (user === undefined || user === null || user === '') {
    throw new HttpProblem(
      400,
      'USER_REQUIRED',
      'an administrator key (or a database without keys) needs the user the chat is for: set the request body field "user" to their id, or use a key bound to the user (mneme keys create --user <id>)',
    );
  } else {
    // Not one of mneme's own actors (`assistant`, `maintenance`, ...; ADR 38): its exchange could not be recorded.
    userId = parseField(PersonIdSchema, user, 'user');
  }
  const header = context.req.header(CHANNEL_HEADER);
  if (header !== undefined) {
    return { principal, userId, channelId: parseField(ChannelIdSchema, header, CHANNEL_HEADER, 'header') };
  }
  const channelId = defaultChannel(userId);
  if (channelId.length > MAX_ID_CHARS) {
    // A user id of up to 200 characters is valid, but its default channel is longer than a channel id may be.
    throw new HttpProblem(
      400,
      'INVALID_CHAT_REQUEST',
      `user ${clipChars(userId, 40)}... has an id too long for a default channel (${channelId.length} characters, at most ${MAX_ID_CHARS}): name the channel with the X-Mneme-Channel header`,
    );
  }
  return { principal, userId, channelId };
}

/** The channel of a user's exchanges when the request names none. */
export function defaultChannel(userId: string): string {
  return `proxy:${userId}`;
}

/** A field of the request (a header's value read as UTF-8), or 400 INVALID_CHAT_REQUEST. */
function parseField<T>(schema: Parameters<typeof parseInput>[0], value: unknown, what: string, from?: 'header'): T {
  try {
    return parseInput(
      schema,
      from === 'header' && typeof value === 'string' ? headerText(value, what) : value,
      what,
    ) as T;
  } catch (error) {
    throw new HttpProblem(400, 'INVALID_CHAT_REQUEST', errorMessage(error));
  }
}

function relayWhole(answer: Response, bytes: Uint8Array, secret: string): Response {
  return new Response(answer.status === 204 || answer.status === 304 ? null : bytes, {
    status: answer.status,
    headers: relayedHeaders(answer.headers, secret),
  });
}

/**
 * The external id an exchange is recorded under when the request has an `Idempotency-Key`: a client
 * that retries a completion (a timeout, a dropped connection) with the same key and the same user
 * message gets its answer again from the upstream, but the exchange is stored once (the user message
 * is a duplicate by its id, and its reply by the reply it already has). The user's text is part of the
 * id, so a key reused for another message records that message. None without the header.
 */
function exchangeIdOf(key: string | undefined, userText: string): string | undefined {
  if (key === undefined) return undefined;
  try {
    checkIdempotencyKey(key);
  } catch (error) {
    throw new HttpProblem(400, 'INVALID_CHAT_REQUEST', errorMessage(error));
  }
  return `idempotency:${createHash('sha256').update(`${key}\n${userText}`).digest('hex')}`;
}

/** The upstream's response headers a client gets: not the hop-by-hop ones, and never the upstream's key. */
function relayedHeaders(headers: Headers, secret: string): Headers {
  const kept = new Headers();
  headers.forEach((value, name) => {
    if (responseHeadersKept(name)) kept.append(name, secret ? value.replaceAll(secret, REDACTED) : value);
  });
  return kept;
}

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}

/** The system error under fetch's "fetch failed" (ECONNREFUSED, ENOTFOUND, ...). */
function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  return errorMessage(cause ?? error);
}
