import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';
import { createMneme } from '../config/create-mneme.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-cli-turns-'));
const database = join(folder, 'turns.db');
afterAll(() => rmSync(folder, { recursive: true, force: true }));

beforeAll(async () => {
  const mneme = await createMneme({ path: database, logger: { warn: () => {}, info: () => {} } });
  try {
    await mneme.putChannel({ id: 'room', visibility: 'private', members: ['oz', 'ann'] });
    await mneme.ingestExchange({
      channelId: 'room',
      userId: 'oz',
      userMessage: 'Where is the\nspare key?',
      assistantReply: 'Under the blue vase.',
      createdAt: '2024-06-15T12:00:00Z',
    });
    await mneme.ingest({ channelId: 'room', sender: 'ann', content: 'Thanks!', createdAt: '2024-06-15T12:01:00Z' });
    await mneme.ingest({ channelId: 'other', sender: 'bob', content: 'Not in the room', createdAt: 0 });
    await mneme.whenIdle();
  } finally {
    await mneme.close();
  }
});

const run = (...argv: string[]) => runCli(database, argv);

describe('mneme turns', () => {
  it("prints a channel's last messages oldest first, one a line with time, sender, role and content", async () => {
    expect(await run('turns', '--channel', 'room')).toEqual({
      code: 0,
      stderr: '',
      stdout: [
        '2024-06-15T12:00:00.000Z oz (user): Where is the spare key?',
        '2024-06-15T12:00:00.000Z assistant (assistant): Under the blue vase.',
        '2024-06-15T12:01:00.000Z ann (user): Thanks!',
        '',
      ].join('\n'),
    });
    expect((await run('turns', '--channel', 'room', '--count', '1')).stdout).toBe(
      '2024-06-15T12:01:00.000Z ann (user): Thanks!\n',
    );
    expect((await run('turns', '--channel', 'nobody-here')).stdout).toBe('no messages\n');
  });

  it('prints the messages as a JSON array with --json', async () => {
    const result = await run('--json', 'turns', '--channel', 'room', '--count', '2');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([
      expect.objectContaining({ senderId: 'assistant', role: 'assistant', content: 'Under the blue vase.' }),
      expect.objectContaining({ senderId: 'ann', role: 'user', content: 'Thanks!', channelId: 'room' }),
    ]);
  });

  it('refuses a count of 0, 51 or abc and a missing --channel with exit code 2 and one clear line', async () => {
    for (const count of ['0', '51', 'abc', '2.5']) {
      const result = await run('turns', '--channel', 'room', '--count', count);
      expect(result, count).toMatchObject({ code: 2, stdout: '' });
      expect(result.stderr).toBe(
        `mneme: option '--count <n>' argument '${count}' is invalid. expected a whole number from 1 to 50\n`,
      );
    }
    const missing = await run('turns');
    expect(missing).toMatchObject({ code: 2, stdout: '' });
    expect(missing.stderr).toMatch(/--channel/);
  });

  it('shows a user acting with --as only the channels it belongs to', async () => {
    expect((await run('--as', 'ann', 'turns', '--channel', 'room', '--count', '1')).stdout).toBe(
      '2024-06-15T12:01:00.000Z ann (user): Thanks!\n',
    );
    const refused = await run('--as', 'carol', 'turns', '--channel', 'room');
    expect(refused).toMatchObject({ code: 5, stdout: '' });
    expect(refused.stderr).toMatch(/carol is not a member of channel room/);
  });
});
