import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the loopback server received, its JSON body parsed when it had one. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** What the loopback server answers: JSON, raw text, a status and headers, or nothing at all (`hang`). */
export interface LoopbackReply {
  status?: number;
  json?: unknown;
  text?: string;
  headers?: Record<string, string>;
  hang?: boolean;
}

export interface LoopbackServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * A real HTTP server on 127.0.0.1 that records every request and answers with `handler`: the
 * provider adapters are tested against the wire format, never against the internet.
 */
export async function startLoopbackServer(
  handler: (request: RecordedRequest, index: number) => LoopbackReply | Promise<LoopbackReply>,
): Promise<LoopbackServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = raw;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        // keep the raw text
      }
      const request = { method: incoming.method ?? '', path: incoming.url ?? '', headers: incoming.headers, body };
      requests.push(request);
      const reply = await handler(request, requests.length - 1);
      if (reply.hang) return;
      const text = reply.text ?? JSON.stringify(reply.json ?? {});
      outgoing.writeHead(reply.status ?? 200, {
        'content-type': reply.text === undefined ? 'application/json' : 'text/plain',
        ...reply.headers,
      });
      outgoing.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A loopback URL where nothing listens: a server was started there and closed. */
export async function unusedLoopbackUrl(): Promise<string> {
  const server = await startLoopbackServer(() => ({}));
  await server.close();
  return server.url;
}

/** A sleep that does not wait and records what it was asked to wait, for backoff tests. */
export function recordingSleep() {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (milliseconds: number, signal?: AbortSignal) => {
      if (signal?.aborted) throw signal.reason;
      delays.push(milliseconds);
    },
  };
}

/**
 * A chat model on loopback for the chat fact extractor (OpenAI's wire format): `facts` gets the prompt (every message
 * of the request joined by newlines) and returns the facts the model answers.
 */
export function startFactModel(
  facts: (prompt: string) => ReadonlyArray<{ content: string; category: string; scope: string }>,
): Promise<LoopbackServer> {
  return startLoopbackServer((request) => {
    const body = request.body as { messages: Array<{ role: string; content: string }> };
    const prompt = body.messages.map((message) => message.content).join('\n');
    const content = JSON.stringify({ facts: facts(prompt) });
    return {
      json: {
        id: 'chatcmpl-test',
        object: 'chat.completion',
        model: 'house-model',
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      },
    };
  });
}
