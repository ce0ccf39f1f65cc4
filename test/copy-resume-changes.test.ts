import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyDatabase } from '../src/config/copy-database.js';
import { createMneme } from '../src/config/create-mneme.js';
import { isMnemeError } from '../src/core/errors.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-copy-resume-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };

/**
 * Attack finding (wt-attack, 2026-12-01): `mneme copy` resumed after an interruption skips the rows it
 * copied before, and checks only counts at the end. A source that changed rows in place between the
 * two runs (a key revoked, a channel made private, a memory forgotten: same counts) gave a copy that
 * reported success and held the old rows: the revoked key worked again on the copy, the private
 * channel was public, the forgotten memory recalled.
 */
describe('mneme copy resumed after the source changed rows it had already copied', () => {
  it('does not end in a copy with a revoked key alive, a private channel public or a forgotten memory back', async () => {
    const source = join(folder, 'source.db');
    const target = join(folder, 'target.db');
    const mneme = await createMneme({ path: source, logger: quiet });
    const { key } = await mneme.apiKeys.create({ label: 'bob app', userId: 'bob' });
    await mneme.putChannel({ id: 'plans', visibility: 'public', members: ['ann'] });
    const secret = await mneme.remember({ content: 'The launch code word is marigold', scope: 'global' });
    for (let index = 0; index < 30; index++) {
      await mneme.remember({ content: `Filler memory number ${index}`, scope: 'personal', userId: 'ann' });
    }
    await mneme.close();

    let batches = 0;
    await expect(
      copyDatabase({
        from: source,
        to: target,
        batchSize: 5,
        onProgress: ({ table }) => {
          if (table === 'memories' && ++batches === 3) throw new Error('interrupted');
        },
      }),
    ).rejects.toThrow('interrupted');

    // Meanwhile the service goes on serving the source.
    const serving = await createMneme({ path: source, logger: quiet });
    const [record] = await serving.apiKeys.list();
    await serving.apiKeys.revoke(record?.prefix ?? '');
    await serving.putChannel({ id: 'plans', visibility: 'private', members: ['ann'] });
    await serving.forget(secret.id);
    await serving.close();

    // The resumed copy refuses: the rows it copied before would not be copied again.
    const resumed = await copyDatabase({ from: source, to: target, batchSize: 5 }).catch((error: unknown) => error);
    expect(isMnemeError(resumed, 'STORE_FAILED')).toBe(true);
    expect((resumed as Error).message).toMatch(/changed since the interrupted copy .* copy into a new database/);

    // A copy into a new database holds the source as it is now.
    const fresh = join(folder, 'fresh.db');
    const report = await copyDatabase({ from: source, to: fresh, batchSize: 5 });
    expect(report.tables.every((entry) => entry.source === entry.target)).toBe(true);
    const copy = await createMneme({ path: fresh, logger: quiet });
    try {
      expect(await copy.apiKeys.authenticate(key)).toBeNull();
      expect((await copy.channel('plans')).visibility).toBe('private');
      expect((await copy.get(secret.id)).archivedAt).not.toBeNull();
    } finally {
      await copy.close();
    }
  }, 120_000);
});
