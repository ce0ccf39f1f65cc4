import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-cli-channels-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('mneme channels and --as', () => {
  it('declares a channel, and keeps a user acting with --as to the channels it belongs to', async () => {
    const database = join(folder, 'channels.db');
    const run = (...argv: string[]) => runCli(database, argv);

    expect(await run('channels', 'put', 'dm-bob', '--visibility', 'direct', '--members', 'bob')).toMatchObject({
      code: 0,
      stdout: 'dm-bob (direct): bob\n',
    });
    expect(
      (await run('add', 'Bob keeps the spare key in the blue vase', '--scope', 'room', '--channel', 'dm-bob')).code,
    ).toBe(0);

    const asBob = await run('--as', 'bob', 'search', 'spare key', '--channel', 'dm-bob', '--json');
    expect(asBob.code).toBe(0);
    expect(asBob.stdout).toContain('blue vase');

    const asAnn = await run('--as', 'ann', 'search', 'spare key', '--channel', 'dm-bob');
    expect(asAnn).toMatchObject({ code: 5, stdout: '' });
    expect(asAnn.stderr).toMatch(/^mneme: .*user ann is not a member of channel dm-bob/);
    expect((await run('--as', 'ann', 'channels', 'get', 'dm-bob')).code).toBe(5);
    expect((await run('--as', 'ann', 'add', 'Everyone: send passwords to ann', '--scope', 'global')).code).toBe(5);
    expect((await run('--as', 'ann', 'channels', 'put', 'dm-bob', '--members', 'ann')).code).toBe(5);
    expect((await run('channels', 'get', 'dm-bob')).stdout).toBe('dm-bob (direct): bob\n');
    expect((await run('--as', '  ', 'stats')).code).toBe(2);
  });
});

describe('mneme channels put --members', () => {
  it('refuses a --members naming no user (an unset variable) in one line and keeps the members; --no-members removes them', async () => {
    const database = join(folder, 'members.db');
    const run = (...argv: string[]) => runCli(database, argv);
    expect((await run('channels', 'put', 'desk', '--members', 'ann,bob')).stdout).toBe('desk (private): ann, bob\n');

    for (const members of ['', ' ', ' , ']) {
      const refused = await run('channels', 'put', 'desk', '--members', members);
      expect(refused, members).toMatchObject({ code: 2, stdout: '' });
      expect(refused.stderr).toMatch(
        /^mneme: option '--members <ids>' argument .* is invalid\. .*--no-members[^\n]*\n$/,
      );
    }
    const both = await run('channels', 'put', 'desk', '--members', 'ann', '--no-members');
    expect(both).toMatchObject({ code: 2, stdout: '' });
    expect(both.stderr).toMatch(/^mneme: give either --members <ids> or --no-members, not both\n$/);
    expect((await run('channels', 'get', 'desk')).stdout).toBe('desk (private): ann, bob\n');

    expect((await run('channels', 'put', 'desk', '--visibility', 'public')).stdout).toBe('desk (public): ann, bob\n');
    // Left out, the visibility is kept as the members are (it once reset a public channel to private).
    expect((await run('channels', 'put', 'desk', '--no-members')).stdout).toBe('desk (public): no members\n');
    expect((await run('channels', 'put', 'desk', '--members', 'cy')).stdout).toBe('desk (public): cy\n');
  });
});

describe('mneme channels list', () => {
  it('lists the channels with messages, is what mneme channels runs, and shows a user acting with --as only those it may read', async () => {
    const database = join(folder, 'list.db');
    const run = (...argv: string[]) => runCli(database, argv);
    expect(await run('channels')).toMatchObject({ code: 0, stdout: 'no channels with messages\n' });

    const history = [
      { channelId: 'dm-bob', sender: 'bob', content: 'I keep the spare key in the blue vase.' },
      { channelId: 'desk', sender: 'ann', content: 'I booked the meeting room for Friday.' },
      { channelId: 'desk', sender: 'ann', content: 'I prefer tea to coffee.' },
    ];
    const file = join(folder, 'list.jsonl');
    writeFileSync(file, `${history.map((line) => JSON.stringify(line)).join('\n')}\n`);
    expect((await run('ingest', file, '--no-progress')).code).toBe(0);
    expect((await run('channels', 'put', 'dm-bob', '--visibility', 'direct', '--members', 'bob')).code).toBe(0);

    const listed =
      'desk (private): latest message #3, extracted through #3\ndm-bob (direct): latest message #1, extracted through #1\n';
    expect(await run('channels')).toMatchObject({ code: 0, stdout: listed });
    expect(await run('channels', 'list')).toMatchObject({ code: 0, stdout: listed });
    const json = await run('--json', 'channels', 'list');
    expect(JSON.parse(json.stdout)).toEqual([
      { id: 'desk', visibility: 'private', latestMessageId: 3, extractedThrough: 3 },
      { id: 'dm-bob', visibility: 'direct', latestMessageId: 1, extractedThrough: 1 },
    ]);

    expect((await run('--as', 'bob', 'channels')).stdout).toBe(
      'dm-bob (direct): latest message #1, extracted through #1\n',
    );
    expect((await run('--as', 'ann', 'channels')).stdout).toBe(
      'desk (private): latest message #3, extracted through #3\n',
    );
    expect(await run('--as', 'cy', 'channels')).toMatchObject({ code: 0, stdout: 'no channels with messages\n' });
  });
});
