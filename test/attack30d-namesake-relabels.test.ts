import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';

/**
 * Attack 30d on ADR 44: the labels written when a namesake arrives, or a user leaves a name, are written into memories
 * that quote other people too (an episode of a room quotes every speaker of its window).
 */

const STORES = [':memory:', 'pglite:memory:'];
const HOUR_MS = 60 * 60 * 1000;

/** A room whose messages of one hour (`said`) made an episode; `names` the display names of its members. */
async function roomWithEpisode(path: string, names: Record<string, string>, said: [string, string][]) {
  const clock = createFixedClock('2026-03-02T10:00:00Z');
  const mneme = await createMneme({
    path,
    clock,
    embedder: createFakeEmbeddingModel(),
    logger: { warn: () => {}, info: () => {} },
  });
  const members = [...new Set([...Object.keys(names), ...said.map(([sender]) => sender)])];
  await mneme.putChannel({ id: 'finance', visibility: 'private', members });
  for (const [userId, displayName] of Object.entries(names)) await mneme.setDisplayName({ userId, displayName });
  for (const [index, [sender, content]] of said.entries()) {
    const createdAt = new Date(Date.parse('2026-03-02T10:00:00Z') + index * 60_000).toISOString();
    await mneme.ingest({ channelId: 'finance', sender, content, createdAt });
  }
  await mneme.whenIdle();
  clock.set(Date.parse('2026-03-02T10:00:00Z') + 2 * HOUR_MS);
  await mneme.maintain({ tasks: ['episodes'] });
  return mneme;
}

async function episodeOf(mneme: Mneme): Promise<string> {
  const episodes = (await mneme.list({ limit: 100 })).memories.filter((memory) => memory.category === 'episode');
  expect(episodes).toHaveLength(1);
  return episodes[0]?.content ?? '';
}

describe.each(STORES)('on %s', (path) => {
  it('leaves what Ann said in an episode as she said it when Eve leaves the name I', { timeout: 60_000 }, async () => {
    const mneme = await roomWithEpisode(path, { ann: 'Ann', eve: 'I' }, [
      ['ann', 'I approve the budget transfer of forty thousand euros to the supplier account today.'],
      ['eve', 'Noted.'],
      ['ann', 'I also signed the lease renewal for the warehouse downtown yesterday evening.'],
      ['eve', 'Fine.'],
      ['ann', 'Thanks.'],
      ['eve', 'Ok.'],
    ]);
    try {
      const before = await episodeOf(mneme);
      expect(before).toContain('Ann: I approve the budget transfer');
      await mneme.setDisplayName({ userId: 'eve', displayName: 'Evelyn' });
      expect(await episodeOf(mneme)).toBe(before);
    } finally {
      await mneme.close();
    }
  });

  it('keeps the label of the real Bob in an episode when Eve leaves the name Bob', { timeout: 60_000 }, async () => {
    const mneme = await roomWithEpisode(path, { bob: 'Bob', eve: 'Bob', ann: 'Ann' }, [
      ['bob', 'I approve the budget transfer of forty thousand euros to the supplier account today.'],
      ['eve', 'Noted.'],
      ['ann', 'Thanks.'],
      ['eve', 'Ok.'],
      ['bob', 'Fine.'],
      ['ann', 'Good.'],
    ]);
    try {
      const before = await episodeOf(mneme);
      expect(before).toContain('Bob (bob): I approve the budget transfer');
      await mneme.setDisplayName({ userId: 'eve', displayName: 'Evelyn' });
      const after = await episodeOf(mneme);
      expect(after).toContain('Bob (bob): I approve the budget transfer');
      expect(after).not.toContain('(eve) (bob)');
    } finally {
      await mneme.close();
    }
  });
  it('labels the lines Eve said as Bob in an episode when the real Bob arrives, and no word of Ann', {
    timeout: 60_000,
  }, async () => {
    const mneme = await roomWithEpisode(path, { eve: 'Bob', ann: 'Ann' }, [
      ['eve', 'I approve the budget transfer of forty thousand euros to the supplier account today.'],
      ['ann', 'Bob said the warehouse lease renewal was signed yesterday evening downtown.'],
      ['eve', 'Noted.'],
      ['ann', 'Thanks.'],
      ['eve', 'Ok.'],
      ['ann', 'Good.'],
    ]);
    try {
      const before = await episodeOf(mneme);
      expect(before).toContain('Bob: I approve the budget transfer');
      await mneme.apiKeys.create({ label: 'bob', userId: 'bob' });
      expect(await episodeOf(mneme)).toBe(before.replace('Bob: I approve', 'Bob (eve): I approve'));
    } finally {
      await mneme.close();
    }
  });
});

describe('a blank name stored before names were checked', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack30d-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('is not shown and labels nothing when its user takes a name', { timeout: 60_000 }, async () => {
    const path = join(folder, 'mneme.db');
    let mneme = await createMneme({ path, clock: createFixedClock('2026-03-02T10:00:00Z') });
    await mneme.putChannel({ id: 'finance', visibility: 'private', members: ['ann', 'eve'] });
    await mneme.close();
    // An import or a build before names were checked left Eve a blank name.
    const raw = new Database(path);
    raw.prepare("UPDATE users SET display_name = '' WHERE id = 'eve'").run();
    raw.close();
    mneme = await createMneme({ path, clock: createFixedClock('2026-03-02T10:00:00Z') });
    try {
      await mneme.ingest({ channelId: 'finance', sender: 'eve', content: 'I approve the budget transfer today.' });
      await mneme.whenIdle();
      const remembered = 'Eve prefers tea. Also coffee, later.';
      await mneme.remember({ content: remembered, scope: 'personal', userId: 'eve' });
      const before = (await mneme.list({ limit: 100 })).memories.map((memory) => memory.content);
      expect(before.some((content) => content.startsWith('eve: I approve the budget transfer'))).toBe(true);
      await mneme.setDisplayName({ userId: 'eve', displayName: 'Evelyn' });
      const after = (await mneme.list({ limit: 100 })).memories.map((memory) => memory.content);
      expect(after).toEqual(before);
      expect(after).toContain(remembered);
    } finally {
      await mneme.close();
    }
  });
});
