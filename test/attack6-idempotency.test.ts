import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createHttpApp } from '../src/http/http-app.js';

// Attack (session 6, wt-attack6) on fcc7ecc: an administrator key's claim also reads `admin:<label>`, its label's
// space before session 4 (ADR 14). That space is not only the key's own past: every administrator key of that
// label reads it (a key created after the upgrade, or after the key that wrote the row was revoked), and the
// `--open` service writes there today under its fixed labels, which an operator may give a key too.
const folder = mkdtempSync('/tmp/wt-attack6-idem-');
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };

function sender(app: ReturnType<typeof createHttpApp>) {
  return async (key: string | null, idempotencyKey: string, content: string) => {
    const response = await app.request('/api/messages', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
        ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      },
      body: JSON.stringify({ channelId: 'ops', sender: 'bob', content }),
    });
    return { status: response.status, replayed: response.headers.get('idempotent-replayed') === 'true' };
  };
}

describe('attack6: the former key space of an administrator key', () => {
  it("does not answer a key created after the upgrade with a revoked key's response stored under their shared label", async () => {
    const path = join(folder, 'revoked.db');
    const mneme = await createMneme({ path, logger: quiet });
    try {
      const send = sender(createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} }));
      const old = await mneme.apiKeys.create({ label: 'deploy' });
      expect(await send(old.key, 'n1', 'The backup runs at 02:00')).toEqual({ status: 202, replayed: false });
      await mneme.whenIdle();
      // What a version before session 4 stored: the row under the label (as the dated ADR 14 test does).
      const file = new Database(path, { timeout: 10_000 });
      try {
        file
          .prepare("UPDATE idempotency_keys SET principal = 'admin:deploy' WHERE principal = ?")
          .run(`admin-key:${old.id}`);
      } finally {
        file.close();
      }
      // The old key is revoked; another team's key is created after the upgrade with the same label.
      await mneme.apiKeys.revoke(old.prefix);
      const fresh = await mneme.apiKeys.create({ label: 'deploy' });
      const retry = await send(fresh.key, 'n1', 'The backup runs at 02:00');
      // Today: 202 replayed, and the new key's message is never stored (one turn, the revoked key's).
      expect(retry).toEqual({ status: 202, replayed: false });
      expect(await mneme.turns({ channelId: 'ops', count: 10 })).toHaveLength(2);
    } finally {
      await mneme.close();
    }
  });

  it("does not answer an administrator key with the `--open` service's response (its label's space)", async () => {
    const path = join(folder, 'open.db');
    const mneme = await createMneme({ path, logger: quiet });
    try {
      // One database, two services: `mneme serve --open` on loopback, and the keyed service.
      const open = sender(createHttpApp({ mneme, apiKeys: mneme.apiKeys, open: true, logError: () => {} }));
      const keyed = sender(createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} }));
      const admin = await mneme.apiKeys.create({ label: 'open (started with --open)' });
      expect(await open(null, 'n1', 'The backup runs at 02:00')).toEqual({ status: 202, replayed: false });
      const other = await keyed(admin.key, 'n1', 'The backup runs at 02:00');
      // Today: 202 replayed, the open caller's response, and the key's own request is never done.
      expect(other).toEqual({ status: 202, replayed: false });
      expect(await mneme.turns({ channelId: 'ops', count: 10 })).toHaveLength(2);
    } finally {
      await mneme.close();
    }
  });

  it('never reads an administrator space for a user key of the same label', async () => {
    const path = join(folder, 'user.db');
    const mneme = await createMneme({ path, logger: quiet });
    try {
      await mneme.putChannel({ id: 'ops', members: ['bob'] });
      const send = sender(createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} }));
      const admin = await mneme.apiKeys.create({ label: 'deploy' });
      const user = await mneme.apiKeys.create({ label: 'deploy', userId: 'bob' });
      expect(await send(admin.key, 'n1', 'The backup runs at 02:00')).toEqual({ status: 202, replayed: false });
      await mneme.whenIdle();
      const file = new Database(path, { timeout: 10_000 });
      try {
        file
          .prepare("UPDATE idempotency_keys SET principal = 'admin:deploy' WHERE principal = ?")
          .run(`admin-key:${admin.id}`);
      } finally {
        file.close();
      }
      expect(await send(user.key, 'n1', 'The backup runs at 02:00')).toEqual({ status: 202, replayed: false });
      expect(await mneme.turns({ channelId: 'ops', count: 10 })).toHaveLength(2);
    } finally {
      await mneme.close();
    }
  });
});
