import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import { ErrorCode } from './errors.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-keys-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('API keys', () => {
  it('shows a key once and stores only its prefix and a hash', async () => {
    const path = join(folder, 'keys.db');
    const mneme = await createMneme({ path });
    expect(await mneme.apiKeys.hasAny()).toBe(false);
    const created = await mneme.apiKeys.create({ label: 'support bot', userId: 'ann' });
    expect(created.key).toMatch(/^mneme_[0-9a-f]{12}_[A-Za-z0-9_-]{32}$/);
    expect(created.key.startsWith(`mneme_${created.prefix}_`)).toBe(true);
    expect(await mneme.apiKeys.list()).toEqual([expect.not.objectContaining({ key: expect.anything() })]);
    expect(await mneme.apiKeys.authenticate(created.key)).toEqual({
      kind: 'user',
      userId: 'ann',
      label: 'support bot',
      keyId: expect.any(Number),
    });
    await mneme.close();

    const raw = new Database(path);
    const rows = raw.prepare('SELECT * FROM api_keys').all();
    raw.close();
    // The secret may itself contain '_': take everything after the prefix.
    expect(JSON.stringify(rows)).not.toContain(created.key.slice(`mneme_${created.prefix}_`.length));
  });

  it('refuses a wrong secret behind a real prefix, a malformed key and a revoked key', async () => {
    const mneme = await createMneme({ path: ':memory:' });
    const admin = await mneme.apiKeys.create({ label: 'ops' });
    expect(await mneme.apiKeys.authenticate(admin.key)).toMatchObject({
      kind: 'admin',
      label: 'ops',
      keyId: expect.any(Number),
    });
    const forged = `mneme_${admin.prefix}_${'A'.repeat(32)}`;
    expect(await mneme.apiKeys.authenticate(forged)).toBeNull();
    expect(await mneme.apiKeys.authenticate('not-a-key')).toBeNull();
    await mneme.apiKeys.revoke(admin.prefix);
    expect(await mneme.apiKeys.authenticate(admin.key)).toBeNull();
    expect(await mneme.apiKeys.hasAny()).toBe(false);
    await expect(mneme.apiKeys.revoke(admin.prefix)).rejects.toMatchObject({ code: ErrorCode.NotFound });
    await expect(mneme.apiKeys.create({ label: '' })).rejects.toMatchObject({ code: ErrorCode.InvalidInput });
    await mneme.close();
  });
});

describe('API keys under a held write lock', () => {
  it('authenticates a valid key while another connection holds the write lock, without recording its use', async () => {
    const path = join(folder, 'locked-keys.db');
    const mneme = await createMneme({ path, busyTimeoutMs: 0 });
    const created = await mneme.apiKeys.create({ label: 'ops' });
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      expect(await mneme.apiKeys.authenticate(created.key)).toMatchObject({
        kind: 'admin',
        label: 'ops',
        keyId: expect.any(Number),
      });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect((await mneme.apiKeys.list())[0]?.lastUsedAt).toBeNull();
    await mneme.close();
  });
});
