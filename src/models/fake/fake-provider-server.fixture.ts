import { type LoopbackReply, type RecordedRequest, startLoopbackServer } from '../../../test/loopback-server.js';
import { createFakeEmbeddingModel } from './fake-embedding-model.js';

/** What the fake provider server knows; every field has a default. */
export interface FakeProviderServerOptions {
  /** Length of every vector it returns; 768 (nomic-embed-text) by default. */
  dimensions?: number;
  /** The models Ollama has pulled (`/api/tags`); others get Ollama's 404. nomic-embed-text and llama3.2 by default. */
  models?: readonly string[];
  /** The assistant's reply to every chat request; `{"ok": true}` by default. */
  chatReply?: string;
}

/** A loopback server that speaks the Ollama and OpenAI wire formats, records requests and can be told to misbehave. */
export interface FakeProviderServer {
  /** `http://127.0.0.1:<port>`; the OpenAI-compatible endpoints are under `<url>/v1`. */
  readonly url: string;
  /** Every request received, in order, its JSON body parsed. */
  readonly requests: readonly RecordedRequest[];
  /** Answers the next requests with these replies, one each, before anything else. */
  answerNext(...replies: LoopbackReply[]): void;
  /** Answers every later request (after those of `answerNext`) with this reply instead of the wire format. */
  answerAlways(reply: LoopbackReply): void;
  close(): Promise<void>;
}

/**
 * Starts a real HTTP server on 127.0.0.1 (port 0) that answers like Ollama (`/api/embed`, `/api/chat`,
 * `/api/tags`) and an OpenAI-compatible server (`/v1/embeddings`, whose data comes back in reverse
 * order as the protocol allows, and `/v1/chat/completions`). Vectors are those of
 * `createFakeEmbeddingModel` for each text as sent, prefix included. Test support: not published.
 */
export async function startFakeProviderServer(options: FakeProviderServerOptions = {}): Promise<FakeProviderServer> {
  const embedder = createFakeEmbeddingModel({ dimensions: options.dimensions ?? 768 });
  const pulled = (options.models ?? ['nomic-embed-text', 'llama3.2']).map(withTag);
  const chatReply = options.chatReply ?? '{"ok": true}';
  const queued: LoopbackReply[] = [];
  let always: LoopbackReply | undefined;

  async function speak(request: RecordedRequest): Promise<LoopbackReply> {
    const body = (request.body ?? {}) as { model?: unknown; input?: unknown };
    const model = typeof body.model === 'string' ? body.model : '';
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    const texts = Array.isArray(input) && input.every((text) => typeof text === 'string') ? input : undefined;
    if (request.path.startsWith('/api/') && request.method === 'POST' && !pulled.includes(withTag(model))) {
      return { status: 404, json: { error: `model "${model}" not found, try pulling it first` } };
    }
    switch (`${request.method} ${request.path}`) {
      case 'GET /api/tags':
        return { json: { models: pulled.map((name) => ({ name, model: name })) } };
      case 'POST /api/embed':
        if (!texts) return { status: 400, json: { error: 'invalid input type' } };
        return {
          json: { model, embeddings: (await embedder.embed(texts, 'document')).map((vector) => Array.from(vector)) },
        };
      case 'POST /api/chat':
        return {
          json: { model, message: { role: 'assistant', content: chatReply }, done: true, done_reason: 'stop' },
        };
      case 'POST /v1/embeddings': {
        if (!texts) return { status: 400, json: { error: { message: "'input' is a required property" } } };
        const vectors = await embedder.embed(texts, 'document');
        const data = vectors.map((vector, index) => ({ object: 'embedding', index, embedding: Array.from(vector) }));
        return { json: { object: 'list', data: data.reverse(), model, usage: { prompt_tokens: 0, total_tokens: 0 } } };
      }
      case 'POST /v1/chat/completions':
        return {
          json: {
            id: 'chatcmpl-fake',
            object: 'chat.completion',
            model,
            choices: [{ index: 0, message: { role: 'assistant', content: chatReply }, finish_reason: 'stop' }],
          },
        };
      default:
        return { status: 404, text: '404 page not found' };
    }
  }

  const server = await startLoopbackServer((request) => queued.shift() ?? always ?? speak(request));
  return {
    url: server.url,
    requests: server.requests,
    answerNext: (...replies) => queued.push(...replies),
    answerAlways: (reply) => {
      always = reply;
    },
    close: server.close,
  };
}

/** Ollama's full name of a model: `llama3.2` is `llama3.2:latest`. */
function withTag(model: string): string {
  return model.includes(':') ? model : `${model}:latest`;
}
