import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { mnemeBinary, startServeProcess } from './serve-process.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-serve-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

describe('mneme serve (the built package)', () => {
  it('ingests a conversation over HTTP, recalls from it, and loses nothing acknowledged on SIGTERM', async () => {
    const database = join(folder, 'service.db');
    const { child, stderr, call } = await startServeProcess(database, children);

    expect((await call('GET', '/api/health')).body).toEqual({ status: 'ok' });
    expect((await call('PUT', '/api/users/oz', { displayName: 'Oz' })).status).toBe(200);
    const lines = [
      ['I prefer green tea over coffee in the morning', 'Noted, green tea it is.'],
      ['My daughter is called Mira and she is seven', 'Seven is a lovely age.'],
      ['I work as a nurse at the children hospital', 'That must be rewarding work.'],
      ['We are planning a trip to Lisbon in October', 'Lisbon is beautiful in autumn.'],
    ];
    let acknowledged = 0;
    for (let round = 0; round < 5; round++) {
      for (const [userMessage, assistantReply] of lines) {
        const response = await call('POST', '/api/exchanges', {
          channelId: 'oz-dm',
          userId: 'oz',
          userMessage: `${userMessage} (${round})`,
          assistantReply,
        });
        expect(response.status).toBe(202);
        acknowledged += 2;
      }
    }

    let found: string | undefined;
    for (let attempt = 0; attempt < 100 && !found; attempt++) {
      const search = await call('POST', '/api/memories/search', {
        query: 'what does Oz drink in the morning?',
        viewer: { userId: 'oz', channelId: 'oz-dm' },
      });
      const hits = search.body.hits as Array<{ memory: { content: string } }>;
      found = hits.map((hit) => hit.memory.content).find((content) => /Oz prefers green tea/.test(content));
      if (!found) await new Promise((wait) => setTimeout(wait, 100));
    }
    expect(found, stderr()).toBeDefined();
    const context = await call('POST', '/api/context', { query: 'morning drink', viewer: { userId: 'oz' } });
    expect(context.body).toMatchObject({ text: expect.stringMatching(/green tea/), hits: expect.any(Array) });
    const listed = (await call('GET', '/api/memories?archived=include&limit=1')).body.total as number;

    const exit = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(stderr()).toMatch(/SIGTERM, stopping/);

    const reopened = await createMneme({ path: database });
    const stats = await reopened.stats();
    expect(stats.messages).toBe(acknowledged);
    expect(stats.total).toBeGreaterThanOrEqual(listed);
    await reopened.close();
  });

  it('refuses to listen beyond loopback while no API key exists, and does not make a new file to refuse it', async () => {
    const serve = async (database: string) => {
      const child = spawn(
        process.execPath,
        [mnemeBinary, 'serve', '--host', '0.0.0.0', '--port', '0', '--db', database],
        {
          env: { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      children.push(child);
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const code = await new Promise<number | null>((done) => child.once('exit', (exitCode) => done(exitCode)));
      return { code, stderr };
    };
    const existing = join(folder, 'open.db');
    await (await createMneme({ path: existing })).close();
    const refused = await serve(existing);
    expect(refused.code).toBe(9);
    expect(refused.stderr).toMatch(/refusing to listen on 0.0.0.0 without authentication: create a key first/);

    const missing = join(folder, 'never-made.db');
    const refusedNew = await serve(missing);
    expect(refusedNew.code).toBe(9);
    expect(refusedNew.stderr).toMatch(
      /^mneme: refusing to listen on 0\.0\.0\.0 without authentication: \S+never-made\.db does not exist yet, so it has no API key; create it with one first \(mneme --db \S+ --create keys create --label <name>\), or bind 127\.0\.0\.1\n$/,
    );
    expect(existsSync(missing)).toBe(false);
  });
});
