import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';
import { unusedLoopbackUrl } from '../../test/loopback-server.js';
import { type FakeProviderServer, startFakeProviderServer } from '../models/fake/fake-provider-server.fixture.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-doctor-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
let databases = 0;

let server: FakeProviderServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Runs the CLI in-process with its own database and environment. */
function cli(env: Record<string, string>, database = join(folder, `doctor-${databases++}.db`)) {
  return (...argv: string[]) => runCli(database, argv, { env });
}

describe('mneme doctor', () => {
  it('shows the detected embedder and the configured chat model, each checked with a real call', async () => {
    server = await startFakeProviderServer();
    const run = cli({ MNEME_OLLAMA_URL: server.url, MNEME_CHAT: 'ollama' });
    const result = await run('doctor');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toBe(
      [
        'embedder: ollama:nomic-embed-text (768 dimensions)',
        '  setting: MNEME_EMBEDDER=auto',
        `  why: auto: Ollama answers at ${server.url} and has nomic-embed-text`,
        '  check: ok: embedded a test sentence: 768 dimensions',
        'chat: ollama:llama3.2',
        '  setting: MNEME_CHAT=ollama',
        `  why: Ollama at ${server.url}, as configured`,
        '  check: ok: answered with valid JSON',
        'database: not created yet',
        '',
      ].join('\n'),
    );
    expect(server.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      'GET /api/tags',
      'POST /api/embed',
      'POST /api/chat',
    ]);
    expect(server.requests[1]?.body).toEqual({
      model: 'nomic-embed-text',
      input: ['search_query: mneme doctor checks this embedding model'],
    });
  });

  it('says why it runs lexical only when auto finds nothing, and makes no other call', async () => {
    const nowhere = await unusedLoopbackUrl();
    const result = await cli({ MNEME_OLLAMA_URL: nowhere })('doctor', '--json');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.embedder).toMatchObject({ model: null, setting: 'auto', check: null });
    expect(report.embedder.reason).toMatch(`Ollama is not reachable at ${nowhere}`);
    expect(report.chat).toMatchObject({ model: null, setting: 'none', check: null });
  });

  it('fails with what to do when the configured provider does not answer', async () => {
    const nowhere = await unusedLoopbackUrl();
    const result = await cli({ MNEME_OLLAMA_URL: nowhere, MNEME_EMBEDDER: 'ollama' })('doctor');
    expect(result.code).toBe(8);
    expect(result.stdout).toContain(
      `  check: FAILED: Ollama is not reachable at ${nowhere}; start it (ollama serve) or set MNEME_EMBEDDER=none`,
    );
    expect(result.stderr).toBe('mneme: doctor found a problem with MNEME_EMBEDDER; see above\n');
  });

  it('reports a setting it does not understand', async () => {
    const result = await cli({ MNEME_EMBEDDER: 'cohere' })('doctor');
    expect(result.code).toBe(8);
    expect(result.stdout).toContain('  check: FAILED: MNEME_EMBEDDER=cohere is not understood');
  });
});

describe('mneme reembed', () => {
  it('embeds memories stored without a model, in batches, with a progress bar on stderr', async () => {
    server = await startFakeProviderServer();
    const database = join(folder, 'reembed.db');
    const offline = cli({ MNEME_EMBEDDER: 'none' }, database);
    for (const text of ['Oz keeps bees', 'Ana plays the cello', 'the team ships on Fridays']) {
      expect((await offline('add', text)).code).toBe(0);
    }
    const online = cli({ MNEME_EMBEDDER: 'ollama', MNEME_OLLAMA_URL: server.url }, database);
    const before = await online('doctor');
    expect(before.stdout).toContain(
      '  vector index: no model yet\n  3 active memories have no vector yet: run mneme reembed',
    );

    const result = await online('reembed', '--batch-size', '2');
    expect(result).toMatchObject({ code: 0, stdout: 're-embedded 3 of 3 memories with ollama:nomic-embed-text\n' });
    // Not a terminal: no bar redrawn in place, one plain final line.
    expect(result.stderr).toBe(`re-embedding [${'#'.repeat(30)}] 100% 3/3\n`);
    const embeds = server.requests.filter((request) => request.path === '/api/embed').slice(1);
    expect(embeds.map((request) => request.body)).toEqual([
      { model: 'nomic-embed-text', input: ['search_document: Oz keeps bees', 'search_document: Ana plays the cello'] },
      { model: 'nomic-embed-text', input: ['search_document: the team ships on Fridays'] },
    ]);
    expect((await online('doctor')).stdout).toContain('  every active memory has a vector');
    expect((await online('reembed', '--json')).stdout).toContain('"total": 0');
  });

  it('refuses to run without an embedding model', async () => {
    const result = await cli({ MNEME_EMBEDDER: 'none' })('reembed');
    expect(result.code).toBe(9);
    expect(result.stderr).toMatch(/^mneme: there is no embedding model to re-embed with; set MNEME_EMBEDDER/);
  });

  it('stays quiet about lexical-only mode in ordinary commands', async () => {
    const nowhere = await unusedLoopbackUrl();
    const result = await cli({ MNEME_OLLAMA_URL: nowhere })('add', 'nothing to say about models');
    expect(result).toMatchObject({ code: 0, stderr: '' });
  });
});
