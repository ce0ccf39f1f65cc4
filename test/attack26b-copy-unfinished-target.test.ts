import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyDatabase } from '../src/config/copy-database.js';
import { createMneme } from '../src/config/create-mneme.js';
import { isMnemeError } from '../src/core/errors.js';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack26b-copy-unfinished-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };

/**
 * Attack finding (wt-b, attack 26b): the target of a `mneme copy` that was stopped (or failed) before its end opened
 * like any database. Served, it answered from part of the source (here no memory at all); and opening it wrote the
 * default policy (preset mneme) where the source's was not copied yet, which the resumed copy kept (it keeps rows
 * already there): the copy ended with every count equal and the target under another preset than its source. A
 * database that holds the mark of a copy under way is now refused at open (CONFLICT, exit 4) by everything but the
 * copy, which finishes it.
 */
describe('the target of a copy that has not ended', () => {
  it.each([
    ['a SQLite file', 'target.db'],
    ['a PGlite folder', 'pglite:target'],
  ])(
    'is refused at open in %s, so no service answers from part of it and no default policy stands for the source one',
    async (_, name) => {
      const source = join(folder, `source-${name.replace(':', '-')}.db`);
      expect((await runCli(source, ['init', '--preset', 'matrix-bot'])).code).toBe(0);
      expect((await runCli(source, ['add', '--scope', 'global', 'The deploy runs on Kubernetes'])).code).toBe(0);
      const target = name.startsWith('pglite:')
        ? `pglite:${join(folder, name.slice('pglite:'.length))}`
        : join(folder, name);
      await expect(
        copyDatabase({
          from: source,
          to: target,
          onProgress: ({ table }) => {
            if (table === 'channels') throw new Error('interrupted');
          },
        }),
      ).rejects.toThrow('interrupted');

      const opened = await createMneme({ path: target, logger: quiet }).then(
        async (mneme) => {
          await mneme.close();
          return null;
        },
        (error: unknown) => error,
      );
      expect(isMnemeError(opened, 'CONFLICT')).toBe(true);
      expect((opened as Error).message).toMatch(
        /the target of a mneme copy that has not ended.*run the same mneme copy again/,
      );
      const served = await runCli(target, ['stats']);
      expect(served.code).toBe(4);

      // The copy run again finishes it, under the source preset; then it opens.
      await copyDatabase({ from: source, to: target });
      const policy = await runCli(target, ['policy', 'show']);
      expect(policy.stdout).toMatch(/^preset: matrix-bot/);
      expect((await runCli(target, ['search', 'kubernetes'])).stdout).toMatch(/The deploy runs on Kubernetes/);
    },
    60_000,
  );
});
