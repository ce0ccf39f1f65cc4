import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { isMnemeError } from '../src/core/errors.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-import-race-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };

/**
 * Attack finding (wt-attack, 2026-12-01): `importData` checked that the database was empty before it
 * opened its transaction. A second import into the same new file (another process, a retried script)
 * that checked while the first was still writing then waited for the lock and, once the first had
 * committed, imported everything again under new ids: every memory and message twice.
 */
describe('two imports into one new database at once', () => {
  it('import the file once: the second is refused once it gets the write lock', async () => {
    const source = await createMneme({ path: ':memory:', logger: quiet });
    await source.ingest({ channelId: 'general', sender: 'ann', content: 'I keep bees on the roof' });
    await source.remember({ content: 'Ann keeps bees on the roof', scope: 'personal', userId: 'ann' });
    const lines: string[] = [];
    for await (const line of source.exportData()) lines.push(line);
    await source.close();

    const path = join(folder, 'target.db');
    const first = await createMneme({ path, logger: quiet });
    const second = await createMneme({ path, logger: quiet });
    try {
      // The first import holds its transaction open until the test lets its second line through.
      let release = () => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      let begun = () => {};
      const writing = new Promise<void>((resolve) => (begun = resolve));
      async function* held() {
        yield lines[0] as string;
        begun();
        await gate;
        yield* lines.slice(1);
      }
      const firstImport = first.importData(held());
      await writing;
      // The second checks while the first is writing (its rows are not committed: the file looks empty),
      // then waits for the write lock.
      const secondImport = second.importData(lines).catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 300));
      release();
      expect((await firstImport).memories).toBe(1);
      const refused = await secondImport;
      expect(isMnemeError(refused, 'CONFLICT')).toBe(true);
      expect((await first.list({})).total).toBe(1);
      expect((await first.turns({ channelId: 'general' })).length).toBe(1);
    } finally {
      await second.close();
      await first.close();
    }
  }, 60_000);
});
