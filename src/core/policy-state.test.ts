import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import { openSqliteDatabase } from '../storage/sqlite/sqlite-database.js';
import { createFixedClock } from '../testing.js';
import { ErrorCode } from './errors.js';
import type { Mneme } from './mneme.js';
import { resolvePolicy } from './policy.js';
import { presetNames, presets } from './presets.js';

const quiet = { warn: () => {}, info: () => {} };

describe('the policy a database runs under', () => {
  let folder: string;
  let path: string;
  const open: Mneme[] = [];
  const openAt = async (options: Parameters<typeof createMneme>[0]) => {
    const mneme = await createMneme({ logger: quiet, clock: createFixedClock('2024-06-01T00:00:00Z'), ...options });
    open.push(mneme);
    return mneme;
  };

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'mneme-policy-'));
    path = join(folder, 'mneme.db');
  });
  afterEach(async () => {
    for (const mneme of open.splice(0)) await mneme.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('resolves every preset to a valid policy', () => {
    for (const name of presetNames) expect(() => resolvePolicy(presets[name].policy), name).not.toThrow();
  });

  it('stores the preset a database is created under, and opens it under that preset with no options', async () => {
    const created = await openAt({ path, preset: 'salience' });
    expect(await created.policy()).toMatchObject({ preset: 'salience', version: 1, overrides: {} });
    await created.close();
    const reopened = await openAt({ path });
    const state = await reopened.policy();
    expect(state.preset).toBe('salience');
    expect(state.policy.decay).toBe('salience');
    expect(state.policy.recall.mode).toBe('recent-first');
    expect(state.policy.context.format).toBe('memory-context');
  });

  it('refuses to open a database under another preset or a conflicting setting, and changes nothing', async () => {
    await (await openAt({ path, preset: 'salience' })).close();
    await expect(openAt({ path, preset: 'mneme' })).rejects.toMatchObject({
      code: ErrorCode.Conflict,
      message: expect.stringMatching(/runs under the salience preset, but the mneme preset was asked for/),
    });
    await expect(openAt({ path, policy: { decay: 'ebbinghaus' } })).rejects.toMatchObject({
      code: ErrorCode.Conflict,
      message: expect.stringMatching(/decay = "ebbinghaus" \(it is "salience"\)/),
    });
    const reopened = await openAt({ path, policy: { decay: 'salience' }, preset: 'salience' });
    expect(await reopened.policyHistory()).toHaveLength(1);
  });

  it('keeps settings given at creation as changes on top of the preset', async () => {
    const mneme = await openAt({ path, preset: 'memo-rag', policy: { context: { wordBudget: 200 } } });
    const state = await mneme.policy();
    expect(state.overrides).toEqual({ context: { wordBudget: 200 } });
    expect(state.policy.context.wordBudget).toBe(200);
    expect(state.policy.decay).toBe('importance-steps');
  });

  it('changes a setting with validation and a new version, and drops a change set back to the preset value', async () => {
    const mneme = await openAt({ path, preset: 'scoped-rest' });
    const changed = await mneme.setPolicy({ settings: { 'context.topK': 8 }, actor: 'ops' });
    expect(changed).toMatchObject({ version: 2, overrides: { context: { topK: 8 } } });
    expect(changed.policy.context.topK).toBe(8);

    await expect(mneme.setPolicy({ settings: { 'context.topK': 0 } })).rejects.toMatchObject({
      code: ErrorCode.InvalidInput,
      message: expect.stringMatching(/context\.topK must be at least 1/),
    });
    await expect(mneme.setPolicy({ settings: { 'recall.nope': 1 } })).rejects.toMatchObject({
      code: ErrorCode.InvalidInput,
    });
    await expect(mneme.setPolicy({ settings: { decay: 'forever' } })).rejects.toMatchObject({
      code: ErrorCode.InvalidInput,
    });
    expect((await mneme.policy()).version).toBe(2);

    const back = await mneme.setPolicy({ settings: { 'context.topK': 5 } });
    expect(back).toMatchObject({ version: 3, overrides: {} });
    const history = await mneme.policyHistory();
    expect(history.map((version) => [version.version, version.actor, version.change])).toEqual([
      [1, null, 'created under the scoped-rest preset'],
      [2, 'ops', 'context.topK = 8'],
      [3, null, 'context.topK = 5'],
    ]);
  });

  it('switches the preset and keeps the changed settings on top of the new one', async () => {
    const mneme = await openAt({ path, policy: { context: { wordBudget: 300 } } });
    const state = await mneme.setPolicy({ preset: 'salience' });
    expect(state).toMatchObject({ preset: 'salience', overrides: { context: { wordBudget: 300 } } });
    expect(state.policy.decay).toBe('salience');
  });

  it("lets another process's engine take up a change at its next maintenance run", async () => {
    const first = await openAt({ path, preset: 'mneme' });
    const second = await openAt({ path });
    await first.setPolicy({ preset: 'salience' });
    const report = await second.maintain({ tasks: ['decay'] });
    expect(report.decay?.policy).toBe('salience');
  });

  it('skips the maintenance tasks the policy leaves out, also when named', async () => {
    const mneme = await openAt({ path, preset: 'salience' });
    const report = await mneme.maintain();
    expect(report.decay).toMatchObject({ policy: 'salience', skipped: null });
    expect(report.episodes?.skipped).toMatch(/not among this database's maintenance tasks/);
    expect((await mneme.maintain({ tasks: ['consolidate'] })).consolidate?.skipped).toMatch(/maintenance\.tasks/);
  });

  it('gives a database from before presets the policy it is first opened with', async () => {
    openSqliteDatabase({ path, migrateTo: 9 }).close();
    const mneme = await openAt({ path, policy: { decay: 'salience' } });
    expect(await mneme.policy()).toMatchObject({ preset: 'mneme', version: 1, overrides: { decay: 'salience' } });
  });

  it('refuses an unknown preset by name', async () => {
    await expect(openAt({ path, preset: 'letta' })).rejects.toMatchObject({
      code: ErrorCode.InvalidInput,
      message: expect.stringMatching(/preset must be one of mneme, matrix-bot, scoped-rest, memo-rag, salience/),
    });
    expect(existsSync(path)).toBe(false);
  });

  it('lets a default nobody asked for give way to a preset while the database is still empty, never after', async () => {
    await (await openAt({ path })).close();
    const empty = await openAt({ path, preset: 'salience' });
    expect(await empty.policy()).toMatchObject({ preset: 'salience', version: 1 });
    expect(await empty.policyHistory()).toHaveLength(1);
    await empty.close();

    const other = join(folder, 'used.db');
    const used = await openAt({ path: other });
    await used.remember({ content: 'kestrel is the staging server' });
    await used.close();
    await expect(openAt({ path: other, preset: 'salience' })).rejects.toMatchObject({ code: ErrorCode.Conflict });
  });

  it('answers STORE_INCOMPATIBLE for stored settings a newer mneme wrote, and a running engine keeps its policy', async () => {
    const warnings: string[] = [];
    const running = await openAt({ path, preset: 'salience', logger: { warn: (message) => warnings.push(message) } });
    const database = openSqliteDatabase({ path });
    database
      .prepare("INSERT INTO policy_versions VALUES (2, 'salience', '{\"recall\":{\"newField\":1}}', 'newer', NULL, 0)")
      .run();
    database.close();
    await expect(openAt({ path })).rejects.toMatchObject({
      code: ErrorCode.StoreIncompatible,
      message: expect.stringMatching(/stored policy \(version 2\) has settings this mneme cannot run .*upgrade mneme/),
    });
    const report = await running.maintain({ tasks: ['decay'] });
    expect(report.decay).toMatchObject({ policy: 'salience', skipped: null });
    expect(warnings).toEqual([expect.stringMatching(/^keeping the policy this engine runs: the stored policy/)]);
  });

  it('treats maintenance tasks in another order as the same policy', async () => {
    await (await openAt({ path, preset: 'memo-rag' })).close();
    const reopened = await openAt({ path, policy: { maintenance: { tasks: ['consolidate', 'decay'] } } });
    expect((await reopened.policy()).policy.maintenance.tasks).toEqual(['decay', 'consolidate']);
  });

  it('stores no version for a change that changes nothing', async () => {
    const mneme = await openAt({ path, preset: 'salience' });
    expect(await mneme.setPolicy({ settings: { 'recall.weights': {} } })).toMatchObject({ version: 1 });
    expect(await mneme.setPolicy({ preset: 'salience' })).toMatchObject({ version: 1 });
    expect(await mneme.policyHistory()).toHaveLength(1);
  });

  it('refuses a __proto__ key inside a value on every preset', async () => {
    for (const preset of ['mneme', 'salience'] as const) {
      const mneme = await openAt({ path: join(folder, `${preset}-proto.db`), preset });
      const change = { settings: { recall: JSON.parse('{"__proto__":{"topK":3}}') as unknown } };
      await expect(mneme.setPolicy(change)).rejects.toMatchObject({ code: ErrorCode.InvalidInput });
      expect((await mneme.policy()).policy.recall.topK).toBe(10);
    }
  });

  it('counts nothing as expiring when the policy does not run decay', async () => {
    const clock = createFixedClock('2024-06-01T00:00:00Z');
    const mneme = await openAt({ path, preset: 'salience', policy: { maintenance: { tasks: [] } }, clock });
    await mneme.remember({ content: 'kestrel is the staging server' });
    clock.set('2024-10-01T00:00:00Z');
    expect((await mneme.stats()).expiring).toBe(0);
  });
});
