import { afterEach, describe, expect, it } from 'vitest';
import { recordingSleep, unusedLoopbackUrl } from '../../test/loopback-server.js';
import { ErrorCode, MnemeError } from '../core/errors.js';
import { type FakeProviderServer, startFakeProviderServer } from './fake/fake-provider-server.fixture.js';
import { backoffDelay, createProviderClient, retryAfterDelay } from './provider-http.js';

let server: FakeProviderServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function client(
  baseUrl: string,
  sleep = recordingSleep().sleep,
  extra: { timeoutMs?: number; maxRetries?: number } = {},
) {
  return createProviderClient({
    provider: 'Ollama',
    baseUrl,
    unreachableHint: 'start it or set MNEME_EMBEDDER=none',
    statusHint: (status) => (status === 404 ? 'pull the model first' : undefined),
    sleep,
    ...extra,
  });
}

describe('the provider HTTP client', () => {
  it('retries 429 and 5xx answers with growing backoff and returns the first success', async () => {
    server = await startFakeProviderServer({ dimensions: 2 });
    server.answerNext({ status: 503, json: { error: 'busy' } }, { status: 429, json: { error: 'busy' } });
    const clock = recordingSleep();
    expect(
      await client(server.url, clock.sleep).postJson('/api/embed', { model: 'nomic-embed-text', input: [] }),
    ).toEqual({ model: 'nomic-embed-text', embeddings: [] });
    expect(server.requests).toHaveLength(3);
    expect(clock.delays).toEqual([backoffDelay(0), backoffDelay(1)]);
    expect(clock.delays).toEqual([500, 1000]);
  });

  it('waits as long as Retry-After asks, in seconds or as a date', async () => {
    server = await startFakeProviderServer();
    server.answerNext({ status: 429, headers: { 'retry-after': '3' }, json: {} }, { json: { ok: true } });
    const clock = recordingSleep();
    await client(server.url, clock.sleep).postJson('/x', {});
    expect(clock.delays).toEqual([3000]);
    expect(retryAfterDelay('Wed, 21 Oct 2015 07:28:05 GMT', Date.parse('Wed, 21 Oct 2015 07:28:00 GMT'))).toBe(5000);
    expect(retryAfterDelay(null)).toBeUndefined();
  });

  it('fails at once when Retry-After asks for longer than it is willing to wait', async () => {
    server = await startFakeProviderServer();
    server.answerAlways({ status: 429, headers: { 'retry-after': '3600' }, json: {} });
    const clock = recordingSleep();
    await expect(client(server.url, clock.sleep).postJson('/x', {})).rejects.toThrow(/asks to wait 3600 s/);
    expect(server.requests).toHaveLength(1);
    expect(clock.delays).toEqual([]);
  });

  it('gives up after the last retry and says how many attempts it made', async () => {
    server = await startFakeProviderServer();
    server.answerAlways({ status: 500, json: { error: 'model crashed' } });
    const error = (await client(server.url)
      .postJson('/api/chat', {})
      .catch((caught: unknown) => caught)) as MnemeError;
    expect(error).toBeInstanceOf(MnemeError);
    expect(error.code).toBe(ErrorCode.ModelFailed);
    expect(error.message).toBe(
      `Ollama at ${server.url} answered 500 to POST /api/chat: model crashed (after 3 attempts)`,
    );
  });

  it('does not retry a client error and adds the hint for its status', async () => {
    server = await startFakeProviderServer();
    await expect(client(server.url).postJson('/api/embed', { model: 'x', input: [] })).rejects.toThrow(
      `answered 404 to POST /api/embed: model "x" not found, try pulling it first; pull the model first`,
    );
    expect(server.requests).toHaveLength(1);
  });

  it('says the server is not reachable and what to do, after retrying', async () => {
    const url = await unusedLoopbackUrl();
    const clock = recordingSleep();
    await expect(client(url, clock.sleep).getJson('/api/tags')).rejects.toThrow(
      new RegExp(`^Ollama is not reachable at ${url}; start it or set MNEME_EMBEDDER=none \\(ECONNREFUSED`),
    );
    expect(clock.delays).toHaveLength(2);
  });

  it('times out an attempt that gets no answer and retries it', async () => {
    server = await startFakeProviderServer();
    server.answerAlways({ hang: true });
    const clock = recordingSleep();
    // Long enough for each request to reach the server on a loaded machine (50 ms could expire before it was read).
    await expect(client(server.url, clock.sleep, { timeoutMs: 500, maxRetries: 1 }).postJson('/x', {})).rejects.toThrow(
      /did not answer POST \/x within 500 ms \(after 2 attempts\)/,
    );
    expect(server.requests).toHaveLength(2);
  });

  it('reports an answer that is not JSON without retrying', async () => {
    server = await startFakeProviderServer();
    server.answerAlways({ text: '<html>proxy login</html>' });
    await expect(client(server.url).postJson('/x', {})).rejects.toThrow(
      /answered POST \/x with something that is not JSON/,
    );
    expect(server.requests).toHaveLength(1);
  });

  it("stops at once when the caller's signal aborts, during a request or a backoff", async () => {
    server = await startFakeProviderServer();
    server.answerAlways({ hang: true });
    const controller = new AbortController();
    const pending = client(server.url).postJson('/x', {}, { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort(new Error('shutting down'));
    await expect(pending).rejects.toThrow('shutting down');

    const aborted = AbortSignal.abort(new Error('already stopped'));
    await expect(client(server.url).postJson('/x', {}, { signal: aborted })).rejects.toThrow('already stopped');
  });

  it('sends JSON with the configured headers', async () => {
    server = await startFakeProviderServer();
    await createProviderClient({
      provider: 'p',
      baseUrl: `${server.url}/v1/`,
      headers: { authorization: 'Bearer k' },
      unreachableHint: '',
    }).postJson('/embeddings', { model: 'm', input: ['a'] });
    expect(server.requests[0]).toMatchObject({
      method: 'POST',
      path: '/v1/embeddings',
      body: { model: 'm', input: ['a'] },
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
    });
  });
});
