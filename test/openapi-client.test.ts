import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';
import { createFakeEmbeddingModel } from '../src/testing.js';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '..');
const bin = (name: string) => join(root, 'node_modules', '.bin', name);

/**
 * A client program as an integrator would write it: `openapi-fetch` typed by what `openapi-typescript`
 * generated from the served document. It stores a memory, ingests a message, then searches and builds a
 * context, using typed fields of each response; it prints what it read.
 */
const clientProgram = `
import createClient from 'openapi-fetch';
import type { paths } from './mneme-api.js';

const client = createClient<paths>({
  baseUrl: process.env.MNEME_URL ?? '',
  headers: { Authorization: \`Bearer \${process.env.MNEME_KEY ?? ''}\` },
});

const stored = await client.POST('/api/memories', { body: { content: 'The staging server is called kestrel' } });
if (!stored.data) throw new Error(\`createMemory failed: \${stored.response.status}\`);
const storedId: number = stored.data.id;

const ingested = await client.POST('/api/messages', {
  body: { channelId: 'ops', sender: 'ann', content: 'We deploy to kestrel every Tuesday after the standup' },
});
if (!ingested.data) throw new Error(\`ingestMessage failed: \${ingested.response.status}\`);
const message = ingested.data.messages[0];
const messageId: number | undefined = message?.id;
const queued: boolean = ingested.data.queued;

const search = await client.POST('/api/memories/search', { body: { query: 'kestrel staging', topK: 3 } });
if (!search.data) throw new Error(\`searchMemories failed: \${search.response.status}\`);
const firstHit = search.data.hits[0];
const content: string | undefined = firstHit?.memory.content;
const relevance: number | undefined = firstHit?.breakdown.relevance;
// @ts-expect-error a memory has no field \`contents\`: the generated types know every field of a response
const wrong = firstHit?.memory.contents;

const context = await client.POST('/api/context', { body: { query: 'what is the staging server called' } });
if (!context.data) throw new Error(\`buildContext failed: \${context.response.status}\`);
const words: number = context.data.words;
const block: string = context.data.text;

const refused = await client.POST('/api/memories/search', { body: { query: '' } });
const problem: string | undefined = refused.error?.code;

console.log(JSON.stringify({ storedId, messageId, queued, content, relevance, wrong, words, block, problem }));
`;

describe('a client generated from the OpenAPI document', () => {
  let mneme: Mneme;
  let server: RunningHttpServer;
  let key: string;
  const folder = mkdtempSync(join(tmpdir(), 'mneme-openapi-client-'));

  beforeAll(async () => {
    mneme = await createMneme({ path: ':memory:', embedder: createFakeEmbeddingModel() });
    key = (await mneme.apiKeys.create({ label: 'client test' })).key;
    server = await startHttpServer({ mneme, port: 0 });
    symlinkSync(join(root, 'node_modules'), join(folder, 'node_modules'), 'dir');
    writeFileSync(join(folder, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    writeFileSync(
      join(folder, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2023'],
          types: ['node'],
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          skipLibCheck: true,
          outDir: 'out',
        },
        files: ['client.ts'],
      }),
    );
    writeFileSync(join(folder, 'client.ts'), clientProgram);
  });
  afterAll(async () => {
    await server.close();
    await mneme.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('type-checks a program that uses typed response fields and rejects a wrong one, then runs it against the server', async () => {
    const document = await (await fetch(`${server.url}/openapi.json`)).text();
    writeFileSync(join(folder, 'openapi.json'), document);
    await run(bin('openapi-typescript'), ['openapi.json', '--output', 'mneme-api.d.ts'], { cwd: folder });

    // tsc fails on a typed field that does not exist, and on an unused @ts-expect-error (responses typed `any`).
    const compiled = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', '.'], {
      cwd: folder,
    }).catch((error: { stdout: string }) => ({ stdout: error.stdout, failed: true }));
    expect(compiled.stdout).toBe('');
    expect('failed' in compiled).toBe(false);

    const { stdout } = await run(process.execPath, ['out/client.js'], {
      cwd: folder,
      env: { ...process.env, MNEME_URL: server.url, MNEME_KEY: key },
    });
    const printed = JSON.parse(stdout) as Record<string, unknown>;
    expect(printed).toMatchObject({
      storedId: expect.any(Number),
      messageId: expect.any(Number),
      queued: true,
      content: 'The staging server is called kestrel',
      relevance: expect.any(Number),
      words: expect.any(Number),
      block: expect.stringContaining('kestrel'),
      problem: 'INVALID_INPUT',
    });
    expect(printed.wrong).toBeUndefined();
  });
});
