import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyDatabase } from './copy-database.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-copy-missing-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('copyDatabase from a database that does not exist', () => {
  it('is NOT_FOUND (CLI exit 3, as every missing database), and creates no target', async () => {
    const from = join(folder, 'nothing.db');
    const to = join(folder, 'target.db');
    await expect(copyDatabase({ from, to })).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: `there is no database at ${from}; check --from`,
    });
    expect(existsSync(to)).toBe(false);
  });
});
