import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { createFixedClock } from '../src/testing.js';
import { runCli } from './cli-harness.js';
import { LOBBY_SECRET_QUERY, lobbySecretFact } from './lobby-secret.fixture.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack18-import-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * Wt-attack18: `mneme import` restores an export as it was written. An export of a database where a channel was
 * made private by a mneme before 2026-12-03 (which wrote the channel and moved nothing, ADR 5) holds a global fact
 * of that channel; imported, the fact stayed global, and every user's key read the private channel's words. An
 * import now checks every memory it brings against the channels it cites, as an audience change does.
 */
describe('an export whose global fact cites a channel that is private', () => {
  it('is imported with the fact in that room, where a user outside it reads nothing of it', async () => {
    const source = join(folder, 'source.db');
    const clock = createFixedClock('2026-03-02T10:00:00Z');
    const mneme = await createMneme({ path: source, clock, logger: { warn: () => {}, info: () => {} } });
    const fact = await lobbySecretFact(mneme);
    await mneme.close();
    // What a mneme before 2026-12-03 did when the lobby was made private: the channel written, nothing moved.
    const storage = await createSqliteStorage({ path: source });
    await storage.memberships.putChannel({ id: 'lobby', visibility: 'private' }, clock.now());
    await storage.close();

    const file = join(folder, 'export.jsonl');
    expect((await runCli(source, ['export', '--out', file])).code).toBe(0);
    const target = join(folder, 'target.db');
    const imported = await runCli(target, ['import', file]);
    expect(imported.code, imported.stderr).toBe(0);
    const annKey = (await runCli(target, ['keys', 'create', '--user', 'ann', '--label', 'ann'])).stdout.split('\n')[0];

    const cli = await runCli(target, ['--json', '--as', 'ann', 'list']);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).not.toContain('quokkamidnight');
    const restored = await createMneme({ path: target, clock, logger: { warn: () => {}, info: () => {} } });
    try {
      const app = createHttpApp({ mneme: restored, apiKeys: restored.apiKeys, logError: () => {} });
      const headers = { authorization: `Bearer ${annKey}`, 'content-type': 'application/json' };
      const search = await app.request('/api/memories/search', {
        method: 'POST',
        headers,
        body: JSON.stringify({ query: LOBBY_SECRET_QUERY }),
      });
      expect(search.status).toBe(200);
      expect(JSON.stringify(((await search.json()) as { hits: unknown[] }).hits)).not.toContain('quokkamidnight');
      const listed = await app.request('/api/memories?limit=200', { headers });
      expect(await listed.text()).not.toContain('quokkamidnight');
      const [copy] = (await restored.list({ limit: 10 })).memories.filter((m) => m.content === fact.content);
      expect(copy).toMatchObject({ scope: 'room', channelId: 'lobby' });
      const got = await app.request(`/api/memories/${copy?.id}`, { headers });
      expect(got.status).toBe(404);
    } finally {
      await restored.close();
    }
  });
});
