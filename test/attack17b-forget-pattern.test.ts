import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';
import { startServeProcess } from './serve-process.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack17b-forget-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

/**
 * attack17b: `/forget <pattern>` (chat command, MCP `forget`) built one regular expression with `[\s\S]*` for
 * each `*`, which backtracks polynomially: `/forget a*a*a*a*a*a*a*a*b` (24 characters, a user key's message)
 * against one of the user's memories of 2,000 a's held the server's only thread for longer than anyone waits,
 * and every other request with it. A pattern is now matched piece by piece, in linear time.
 */
describe('a /forget pattern of many stars', () => {
  it('is answered at once by mneme serve, forgets what matches, and the server answers the next request', async () => {
    const database = join(folder, 'forget.db');
    const created = await runCli(database, ['--create', 'keys', 'create', '--user', 'ann', '--label', 'ann']);
    expect(created.code).toBe(0);
    const key = created.stdout.split('\n')[0] ?? '';
    const admin = (await runCli(database, ['keys', 'create', '--label', 'admin'])).stdout.split('\n')[0] ?? '';
    const serve = await startServeProcess(database, children);
    const channel = await serve.call('PUT', '/api/channels/ann-dm', { visibility: 'direct', members: ['ann'] }, admin);
    expect(channel.status).toBe(200);
    const long = await serve.call(
      'POST',
      '/api/memories',
      { content: 'a'.repeat(2_000), scope: 'personal', userId: 'ann' },
      key,
    );
    expect(long.status).toBe(201);
    const plain = await serve.call(
      'POST',
      '/api/memories',
      { content: 'Ann likes dark  mode', scope: 'personal', userId: 'ann' },
      key,
    );
    expect(plain.status).toBe(201);

    const stars = await serve.call(
      'POST',
      '/api/messages',
      { channelId: 'ann-dm', sender: 'ann', content: '/forget a*a*a*a*a*a*a*a*b' },
      key,
    );
    expect(stars.status).toBe(202);
    expect(stars.body.command).toMatchObject({ command: 'forget', forgotten: [] });

    const matching = await serve.call(
      'POST',
      '/api/messages',
      { channelId: 'ann-dm', sender: 'ann', content: '/forget a*a*a*a*a*a*a*a*a' },
      key,
    );
    expect(matching.body.command).toMatchObject({ forgotten: [{ id: long.body.id }] });
    const spaced = await serve.call(
      'POST',
      '/api/messages',
      { channelId: 'ann-dm', sender: 'ann', content: '/forget LIKES*dark mode' },
      key,
    );
    expect(spaced.body.command).toMatchObject({ forgotten: [{ id: plain.body.id }] });
    expect((await serve.call('GET', '/api/health')).status).toBe(200);
  }, 60_000);
});
