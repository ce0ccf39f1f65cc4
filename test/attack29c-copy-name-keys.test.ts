import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyDatabase } from '../src/config/copy-database.js';
import { createMneme } from '../src/config/create-mneme.js';
import { createFixedClock } from '../src/testing.js';

/**
 * `mneme copy` moved the users table without the keys a name and an id read as (`name_key`, `id_key`; ADR 40), so in
 * the copy no user was the namesake of anyone: Eve, naming herself Bob in Bob's room of the copied database, spoke as
 * Bob, unlabelled, in the room's exchange chunks and in the facts extracted from what she said.
 */

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack29c-copy-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };
const clock = createFixedClock('2026-03-02T10:00:00Z');

/** A SQLite database where Bob (named) and carol.w (a member who never set a name) share a room with Eve. */
async function roomWithBob(name: string): Promise<string> {
  const path = join(folder, name);
  const mneme = await createMneme({ path, clock, logger: quiet });
  try {
    await mneme.putChannel({ id: 'finance', visibility: 'private', members: ['bob', 'carol.w', 'eve', 'ann'] });
    await mneme.ingest({ channelId: 'finance', sender: 'bob', senderName: 'Bob', content: 'Morning all.' });
    await mneme.whenIdle();
  } finally {
    await mneme.close();
  }
  return path;
}

describe.each([
  ['SQLite', (name: string) => join(folder, `${name}.db`)],
  ['PGlite', (name: string) => `pglite:${join(folder, name)}`],
])('a copy into %s', (_store, target) => {
  it('labels a name that reads like another user s name or id, as the source did', { timeout: 120_000 }, async () => {
    const from = await roomWithBob(`source-${_store}.db`);
    const to = target(`copy-${_store}`);
    await copyDatabase({ from, to });
    const mneme = await createMneme({ path: to, clock, logger: quiet });
    try {
      for (const [name, amount] of [
        ['Bob', '40,000'],
        ['Carol.W', '55,000'],
      ] as const) {
        await mneme.setDisplayName({ userId: 'eve', displayName: name });
        await mneme.ingest({
          channelId: 'finance',
          sender: 'eve',
          content: `I approve the budget transfer of ${amount} euros to the new supplier account today.`,
        });
        await mneme.whenIdle();
      }
      const { memories } = await mneme.list({ limit: 100 });
      const contents = memories.map((memory) => memory.content);
      expect(contents.some((content) => content.startsWith('Bob (eve): I approve the budget transfer of 40,000'))).toBe(
        true,
      );
      expect(
        contents.some((content) => content.startsWith('Carol.W (eve): I approve the budget transfer of 55,000')),
      ).toBe(true);
      // Neither the chunks nor the facts extracted from them name Eve by Bob's or carol.w's name alone.
      const eves = contents.filter((content) => content.includes('budget transfer'));
      expect(eves.length).toBeGreaterThan(2);
      for (const content of eves) expect(content).toMatch(/^(Bob|Carol\.W) \(eve\)/);
    } finally {
      await mneme.close();
    }
  });
});
