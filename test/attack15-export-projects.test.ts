import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack15-export-projects-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * Attack finding (wt-attack15): a per-user export (`mneme --as ann export --user ann`, "what that user may
 * see") held the record of every project whose topic had a message in ann's channels: the id, name and
 * `managed` flag of a project ann is not a member of, which no route shows her (a message shows its topic's
 * id only), and the topic record named that project. Then (session 16) the topic record still held the title
 * of a topic ann is not a member of, which no route shows her either.
 */
describe("a user's export of a channel where another user's project has a topic", () => {
  it('holds no record or id of a project the user is not a member of, and still holds her own', async () => {
    const database = join(folder, 'projects.db');
    const mneme = await createMneme({ path: database, logger: { warn: () => {}, info: () => {} } });
    await mneme.putChannel({ id: 'shared', visibility: 'private', members: ['ann', 'bob'] });
    await mneme.createProject({ id: 'bob-deal', name: 'Acquisition of Initech', managed: true, members: ['bob'] });
    await mneme.createTopic({
      id: 'bob-session',
      projectId: 'bob-deal',
      title: 'Layoffs of the Oslo office',
      members: ['bob'],
    });
    await mneme.createProject({ id: 'ann-garden', name: 'Community garden', members: ['ann'] });
    await mneme.createTopic({ id: 'ann-session', projectId: 'ann-garden', title: 'Planting', members: ['ann'] });
    await mneme.ingest({
      channelId: 'shared',
      sender: 'bob',
      content: 'hello team, a short note',
      topicId: 'bob-session',
    });
    await mneme.ingest({
      channelId: 'shared',
      sender: 'ann',
      content: 'the tomatoes need stakes',
      topicId: 'ann-session',
    });
    await mneme.whenIdle();
    await mneme.close();

    const run = await runCli(database, ['--as', 'ann', 'export', '--user', 'ann'], { create: false });
    expect(run.code, run.stderr).toBe(0);
    const records = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(run.stdout).not.toMatch(/bob-deal|Initech|Layoffs/);
    expect(records.filter((record) => record.type === 'project')).toMatchObject([
      { id: 'ann-garden', name: 'Community garden' },
    ]);
    const topics = records.filter((record) => record.type === 'topic');
    // The topic of bob's message is named by id (the message shows it to her), without its title.
    expect(topics).toContainEqual(expect.objectContaining({ id: 'bob-session', projectId: null, title: null }));
    expect(topics).toContainEqual(
      expect.objectContaining({ id: 'ann-session', projectId: 'ann-garden', title: 'Planting' }),
    );
    // The messages of her channel are there, as the API shows them to her.
    expect(records.filter((record) => record.type === 'message')).toHaveLength(2);
  }, 60_000);
});
