import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { runCli } from './cli-harness.js';
import { type LoopbackServer, startLoopbackServer } from './loopback-server.js';
import { startServeProcess } from './serve-process.js';

const folder = mkdtempSync(join(tmpdir(), 'attack24a-dimensions-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

let server: LoopbackServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** An OpenAI-compatible server for a model mneme does not know: vectors of `state.dimensions`, or 503 while down. */
async function provider(state: { dimensions: number; down: boolean }): Promise<Record<string, string>> {
  server = await startLoopbackServer(async (request) => {
    if (state.down) return { status: 503, json: { error: { message: 'overloaded' } } };
    const { input } = request.body as { input: string[] };
    const vectors = await createFakeEmbeddingModel({ dimensions: state.dimensions }).embed(input, 'document');
    return { json: { data: vectors.map((vector, index) => ({ index, embedding: Array.from(vector) })) } };
  });
  return { MNEME_EMBEDDER: 'openai:house-embedder', MNEME_OPENAI_URL: `${server.url}/v1`, MNEME_CHAT: 'none' };
}

let databases = 0;
/** A database whose three memories have vectors of the house model (64 dimensions). */
async function embeddedDatabase(env: Record<string, string>): Promise<string> {
  const database = join(folder, `house-${databases++}.db`);
  for (const text of ['Oz keeps bees on the roof', 'Ana grows figs', 'Bo fixes bikes']) {
    expect((await runCli(database, ['add', text], { env })).code).toBe(0);
  }
  return database;
}

async function vectors(database: string, env: Record<string, string>) {
  const mneme = await createMneme({
    path: database,
    embedder: 'none',
    providers: { openaiUrl: env.MNEME_OPENAI_URL ?? '' },
  });
  try {
    return await mneme.vectorStatus();
  } finally {
    await mneme.close();
  }
}

describe('attack24a: an embedding model whose dimensions mneme does not know, once the database indexes it', () => {
  it('lets a search answer lexically while its provider is down, instead of failing the command', async () => {
    const state = { dimensions: 64, down: false };
    const env = await provider(state);
    const database = await embeddedDatabase(env);
    state.down = true;
    const search = await runCli(database, ['search', 'bees'], { env });
    expect(search.code).toBe(0);
    expect(search.stdout).toContain('Oz keeps bees on the roof');
    expect(search.stdout).toContain('lexical only');
  });

  it('keeps every vector of the store when its provider answers one start with vectors of another length', async () => {
    const state = { dimensions: 64, down: false };
    const env = await provider(state);
    const database = await embeddedDatabase(env);
    state.dimensions = 32;
    expect((await runCli(database, ['search', 'bees'], { env })).code).toBe(0);
    expect(await vectors(database, env)).toMatchObject({
      index: { model: 'openai:house-embedder', dimensions: 64 },
      missing: 0,
    });
  });

  it('lets mneme serve start and answer a search while its provider is down', { timeout: 60_000 }, async () => {
    const state = { dimensions: 64, down: false };
    const env = await provider(state);
    const database = await embeddedDatabase(env);
    state.down = true;
    const serve = await startServeProcess(database, children, { env });
    expect(serve.stderr()).toContain('models: embedding openai:house-embedder');
    const { status, body } = await serve.call('POST', '/api/memories/search', { query: 'bees' });
    expect(status).toBe(200);
    expect(body).toMatchObject({ vectorLeg: 'model-failed' });
    expect(JSON.stringify(body.hits)).toContain('Oz keeps bees on the roof');
    serve.child.kill('SIGTERM');
  });
});
