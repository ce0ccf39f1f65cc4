import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyDatabase } from '../src/config/copy-database.js';
import { createMneme } from '../src/config/create-mneme.js';
import { isMnemeError } from '../src/core/errors.js';
import { mnemeBinary } from './serve-process.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack26b-copy-live-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };
const env = { PATH: process.env.PATH ?? '', MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' };

/** Runs a `mneme` command on `database` in another process, as a service beside the copy would write. */
function mneme(database: string, ...argv: string[]): void {
  const run = spawnSync(process.execPath, [mnemeBinary, '--db', database, ...argv], { env, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`mneme ${argv.join(' ')}: ${run.stderr}`);
}

/**
 * Attack finding (wt-b, attack 26b): `mneme copy` read its source table by table, each batch a statement of its
 * own, and checked only counts at the end. A service still writing to the source while the copy ran changed rows
 * already copied in place (a key revoked, a channel's members replaced, a memory forgotten): same counts, so the
 * copy reported success, and on the copy the revoked key authenticated, the removed member read the channel and
 * the forgotten memory was recalled. The copy now compares the source's digest at its end with the one it took
 * at its start, and fails (STORE_FAILED, the target kept marked as unfinished) when they differ.
 */
describe('mneme copy while another process writes to its source', () => {
  it('does not end in a copy with a revoked key alive, a removed member back or a forgotten memory recalled', async () => {
    const source = join(folder, 'source.db');
    const target = join(folder, 'target.db');
    const engine = await createMneme({ path: source, logger: quiet });
    const { key, prefix } = await engine.apiKeys.create({ label: 'bob app', userId: 'bob' });
    await engine.putChannel({ id: 'plans', visibility: 'private', members: ['ann', 'bob'] });
    const secret = await engine.remember({
      content: 'The launch code word is marigold',
      scope: 'room',
      channelId: 'plans',
    });
    for (let index = 0; index < 30; index++) {
      await engine.remember({ content: `Filler memory number ${index}`, scope: 'personal', userId: 'ann' });
    }
    await engine.close();

    let batches = 0;
    const copied = await copyDatabase({
      from: source,
      to: target,
      batchSize: 5,
      onProgress: ({ table }) => {
        // The memory's row and the key's are copied already; the service revokes, replaces and forgets.
        if (table !== 'memories' || ++batches !== 3) return;
        mneme(source, 'keys', 'revoke', prefix);
        mneme(source, 'channels', 'put', 'plans', '--visibility', 'private', '--members', 'ann,carol');
        mneme(source, 'forget', String(secret.id));
      },
    }).catch((error: unknown) => error);

    // Before, the copy reported success: counts equal, the key alive, bob a member, the memory recalled.
    expect(isMnemeError(copied, 'STORE_FAILED')).toBe(true);
    expect((copied as Error).message).toMatch(/changed while the copy into .* ran.*copy into a new database/);

    // The target is marked as an unfinished copy: run again into it, the copy refuses.
    const again = await copyDatabase({ from: source, to: target, batchSize: 5 }).catch((error: unknown) => error);
    expect(isMnemeError(again, 'STORE_FAILED')).toBe(true);

    // Copied again into a new database once nothing writes to the source: the source as it is now.
    const fresh = join(folder, 'fresh.db');
    await copyDatabase({ from: source, to: fresh, batchSize: 5 });
    const copy = await createMneme({ path: fresh, logger: quiet });
    try {
      expect(await copy.apiKeys.authenticate(key)).toBeNull();
      expect((await copy.channel('plans')).members).toEqual(['ann', 'carol']);
      expect((await copy.get(secret.id)).archivedAt).not.toBeNull();
    } finally {
      await copy.close();
    }
  }, 120_000);
});
