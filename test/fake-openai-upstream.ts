import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fake upstream received, its JSON body parsed. */
export interface UpstreamRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** A reply the next completion gets instead of the scripted one: an error status with its body and headers. */
export interface UpstreamFailure {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/**
 * A reply the next completion gets, written as it is: a status, headers, the body in pieces a few
 * milliseconds apart, then the end of the response, or (`break`) its connection cut without one.
 */
export interface UpstreamScript {
  status?: number;
  headers?: Record<string, string>;
  pieces: string[];
  break?: boolean;
}

export interface FakeUpstream {
  /** `http://127.0.0.1:<port>/v1`: the base URL, as OpenAI's `baseURL`. */
  url: string;
  requests: UpstreamRequest[];
  /** What a completion answers: plain, the whole text; streamed, these pieces one event each. */
  reply: string[];
  /** Each server-sent event the upstream wrote, in order, as it wrote it (`[DONE]` included). */
  sent: string[];
  /** The next completion gets this instead (once). */
  failNext(failure: UpstreamFailure): void;
  /** The next completion gets this instead (once); `failNext` wins when both are set. */
  scriptNext(script: UpstreamScript): void;
  /**
   * Holds a stream after its first event until `release()`: a test proves the client saw that event
   * before the upstream sent the rest.
   */
  holdStreams(): { release(): void };
  /** Resolves when a stream's response ended or its client went away. */
  streamEnded(): Promise<'finished' | 'client-left'>;
  close(): Promise<void>;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A fake OpenAI-compatible upstream on 127.0.0.1 (a real `node:http` server): `POST /v1/chat/completions`
 * answers a completion (or, with `stream: true`, server-sent events a few milliseconds apart), `GET
 * /v1/models` a model list; every request is recorded.
 */
export async function startFakeUpstream(): Promise<FakeUpstream> {
  const requests: UpstreamRequest[] = [];
  const sent: string[] = [];
  let failure: UpstreamFailure | null = null;
  let script: UpstreamScript | null = null;
  let hold: Promise<void> | null = null;
  const streamEnds: Array<(how: 'finished' | 'client-left') => void> = [];
  const upstream: FakeUpstream = {
    url: '',
    requests,
    reply: ['Green ', 'tea ', 'suits ', 'your ', 'mornings.'],
    sent,
    failNext(next) {
      failure = next;
    },
    scriptNext(next) {
      script = next;
    },
    holdStreams() {
      let release = () => {};
      hold = new Promise<void>((resolve) => {
        release = resolve;
      });
      return { release: () => release() };
    },
    streamEnded: () => new Promise((resolve) => streamEnds.push(resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const json = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(body));
  };

  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : undefined;
      const path = incoming.url ?? '';
      requests.push({ method: incoming.method ?? '', path, headers: incoming.headers, body });
      if (incoming.method === 'GET' && path === '/v1/models') {
        json(response, 200, {
          object: 'list',
          data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'me' }],
        });
        return;
      }
      if (incoming.method !== 'POST' || path !== '/v1/chat/completions') {
        json(response, 404, { error: { message: `no ${incoming.method} ${path}` } });
        return;
      }
      if (failure) {
        const { status, body: failureBody, headers } = failure;
        failure = null;
        json(response, status, failureBody, headers);
        return;
      }
      if (script) {
        const { status = 200, headers = {}, pieces, break: cut = false } = script;
        script = null;
        response.writeHead(status, { 'content-type': 'text/event-stream', ...headers });
        for (const piece of pieces) {
          response.write(piece);
          await pause(5);
        }
        if (cut) response.socket?.destroy();
        else response.end();
        return;
      }
      const model = String(body?.model ?? 'fake-model');
      if (body?.stream !== true) {
        json(response, 200, {
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model,
          choices: [
            { index: 0, message: { role: 'assistant', content: upstream.reply.join('') }, finish_reason: 'stop' },
          ],
        });
        return;
      }
      await relayEvents(response, model);
    });
  });

  async function relayEvents(response: ServerResponse, model: string) {
    let clientLeft = false;
    const closed = new Promise<void>((resolve) =>
      response.on('close', () => {
        if (!response.writableFinished) clientLeft = true;
        resolve();
      }),
    );
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const event = (delta: Record<string, unknown>, finish: string | null = null) =>
      JSON.stringify({
        id: 'chatcmpl-2',
        object: 'chat.completion.chunk',
        created: 1,
        model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
    const events = [
      event({ role: 'assistant', content: '' }),
      ...upstream.reply.map((piece) => event({ content: piece })),
      event({}, 'stop'),
      '[DONE]',
    ];
    for (const [index, data] of events.entries()) {
      if (clientLeft) break;
      if (index === 2 && hold) await Promise.race([hold, closed]);
      else if (index > 0) await pause(5);
      if (clientLeft) break;
      response.write(`data: ${data}\n\n`);
      sent.push(data);
    }
    if (!clientLeft) response.end();
    for (const end of streamEnds.splice(0)) end(clientLeft ? 'client-left' : 'finished');
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return upstream;
}
