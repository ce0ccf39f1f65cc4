import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { ErrorCode } from '../src/core/errors.js';
import { createOpenAiCompatibleEmbeddingModel } from '../src/models/openai-compatible/openai-compatible-embedding-model.js';
import { createFixedClock } from '../src/testing.js';
import { recordingSleep } from './loopback-server.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

const MEGABYTE = 1024 * 1024;

/**
 * A provider that answers every request with 200 and a JSON body that goes on for `megabytes`: the start of an
 * embeddings list, then spaces. `sent` counts what it wrote of each answer before the client left or it ended.
 */
async function hugeAnswers(megabytes: number): Promise<{ url: string; sent: number[] }> {
  const sent: number[] = [];
  const chunk = Buffer.alloc(MEGABYTE, ' ');
  const listening = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const index = sent.push(0) - 1;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"data": [');
      const more = () => {
        while ((sent[index] ?? 0) < megabytes * MEGABYTE) {
          sent[index] = (sent[index] ?? 0) + chunk.length;
          if (!response.write(chunk)) return void response.once('drain', more);
        }
        response.end(']}');
      };
      response.on('close', () => response.destroy());
      more();
    });
  });
  server = listening;
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(listening.address() as AddressInfo).port}/v1`, sent };
}

describe('attack24a: a provider answering with a body far larger than any answer', () => {
  it('is cut off and refused as the model failing, without reading it whole or asking again', async () => {
    const { url, sent } = await hugeAnswers(400);
    const model = createOpenAiCompatibleEmbeddingModel({
      baseUrl: url,
      model: 'text-embedding-3-small',
      sleep: recordingSleep().sleep,
    });
    await expect(model.embed(['Oz keeps bees'], 'document')).rejects.toMatchObject({
      code: ErrorCode.ModelFailed,
      message: expect.stringMatching(/answered POST \/embeddings with more than \d+ MB/),
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toBeLessThan(400 * MEGABYTE);
  });

  it('leaves a memory written meanwhile stored without a vector', async () => {
    const { url } = await hugeAnswers(400);
    const warnings: string[] = [];
    const mneme = await createMneme({
      path: ':memory:',
      clock: createFixedClock(),
      embedder: 'openai:text-embedding-3-small',
      providers: { openaiUrl: url },
      backfill: false,
      logger: { warn: (text) => warnings.push(text), info: () => {} },
    });
    await mneme.remember({ content: 'Oz keeps bees on the roof' });
    expect((await mneme.vectorStatus()).missing).toBe(1);
    expect(warnings.join('\n')).toMatch(/more than \d+ MB/);
    await mneme.close();
  });
});

describe('attack24a: a provider whose error message goes on for megabytes', () => {
  it('is quoted in the error only in part, as an answer that is not JSON is', async () => {
    const { startLoopbackServer } = await import('./loopback-server.js');
    const loopback = await startLoopbackServer(() => ({
      status: 400,
      json: { error: { message: `bad request ${'and worse '.repeat(200_000)}` } },
    }));
    try {
      const model = createOpenAiCompatibleEmbeddingModel({
        baseUrl: `${loopback.url}/v1`,
        model: 'text-embedding-3-small',
      });
      const error = await model.embed(['x'], 'query').then(
        () => null,
        (thrown: unknown) => thrown as Error,
      );
      expect(error?.message).toMatch(/answered 400 to POST \/embeddings: bad request and worse/);
      expect(error?.message.length).toBeLessThan(1000);
    } finally {
      await loopback.close();
    }
  });
});
