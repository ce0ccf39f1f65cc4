import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dreamer } from '../src/core/ports/dreamer.js';
import {
  closeEngineStores,
  engineStores,
  type MaintenanceEngine,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * Dream's insert refuses the insights of an owner when a memory they are built on was forgotten while the dreamer
 * reflected (attack 31c). The run moved the dream watermark past that owner's memories all the same: what was left
 * of them was never dreamed, and nothing said so.
 */

const start = '2024-06-01T00:00:00.000Z';
const bobsOwn = { scope: 'personal', userId: 'bob', category: 'fact' } as const;

describe.each(engineStores)('a dream refused over a forget, on %s', (store) => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack31e-dream-'));
  beforeAll(() => prepareEngineStore(store), 60_000);
  afterAll(async () => {
    await closeEngineStores();
    rmSync(folder, { recursive: true, force: true });
  });

  it('dreams what Bob left by the next run, once', async () => {
    let during: (() => Promise<unknown>) | null = null;
    let dreams = 0;
    const dreamer: Dreamer = {
      id: 'quoting',
      async dream(input) {
        dreams++;
        const write = during;
        during = null;
        if (write) await write();
        return [
          {
            content: `Bob's habits: ${input.memories.map((memory) => memory.content).join('; ')}`,
            category: 'pattern',
            sourceIds: input.memories.map((memory) => memory.id),
          },
        ];
      },
    };
    const path = join(folder, 'retried.db');
    const maintainer = await openMaintenanceEngine({ store, path, start, dreamer });
    // SQLite: Bob's service is another engine on the file; PostgreSQL: a request of the same engine.
    const service: MaintenanceEngine =
      store === 'sqlite' ? await openMaintenanceEngine({ store, path, start }) : maintainer;
    try {
      const ids: number[] = [];
      for (const content of [
        'Bob runs',
        'Bob drinks green tea',
        'Bob reads at night',
        'Bob hides cash in the freezer',
      ]) {
        ids.push((await maintainer.mneme.remember({ content, ...bobsOwn })).id);
      }
      const bob = service.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
      during = () => bob.forget({ id: ids[3] ?? 0 });
      expect((await maintainer.mneme.maintain({ tasks: ['dream'] })).dream?.insights).toBe(0);

      expect((await maintainer.mneme.maintain({ tasks: ['dream'] })).dream?.insights).toBe(1);
      const insights = (await maintainer.mneme.list({ userId: 'bob', limit: 20 })).memories.filter(
        (memory) => memory.source === 'dream',
      );
      expect(insights.map((memory) => memory.sourceIds)).toEqual([ids.slice(0, 3)]);
      expect(insights[0]?.content).not.toContain('freezer');

      // Done once: a third run dreams nothing again.
      expect((await maintainer.mneme.maintain({ tasks: ['dream'] })).dream?.insights).toBe(0);
      expect(dreams).toBe(2);
    } finally {
      if (service !== maintainer) await service.mneme.close();
      await maintainer.mneme.close();
    }
  });
});
