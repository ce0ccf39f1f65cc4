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
 * Dream shows a dreamer (a chat model: seconds) an owner's memories and stores its insights built on every memory
 * shown. A memory Bob forgot while the dreamer reflected on it was quoted by an insight stored after his forget:
 * what he forgot, back in what he (and anyone reading the scope) recalls. The insert already refused an insight on a
 * memory purged or moved out of the owner meanwhile (ADR 5); a forgotten one is as gone for recall.
 */

const start = '2024-06-01T00:00:00.000Z';
const bobsOwn = { scope: 'personal', userId: 'bob', category: 'fact' } as const;

/** A dreamer that quotes every memory it is shown in one insight, with `during` run once while it reflects. */
function quotingDreamer(): { dreamer: Dreamer; during: (write: () => Promise<unknown>) => void } {
  let pending: (() => Promise<unknown>) | null = null;
  return {
    dreamer: {
      id: 'quoting',
      async dream(input) {
        const write = pending;
        pending = null;
        if (write) await write();
        return [
          {
            content: `Bob's habits: ${input.memories.map((memory) => memory.content).join('; ')}`,
            category: 'pattern',
            sourceIds: input.memories.map((memory) => memory.id),
          },
        ];
      },
    },
    during: (write) => {
      pending = write;
    },
  };
}

describe.each(engineStores)('a dream beside Bob forgetting what it reflects on, on %s', (store) => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack31c-dream-'));
  beforeAll(() => prepareEngineStore(store), 60_000);
  afterAll(async () => {
    await closeEngineStores();
    rmSync(folder, { recursive: true, force: true });
  });

  async function open(name: string) {
    const quoting = quotingDreamer();
    const path = join(folder, name);
    const maintainer = await openMaintenanceEngine({ store, path, start, dreamer: quoting.dreamer });
    // SQLite: Bob's service is another engine on the file; PostgreSQL: a request of the same engine.
    const service: MaintenanceEngine =
      store === 'sqlite' ? await openMaintenanceEngine({ store, path, start }) : maintainer;
    const ids: number[] = [];
    for (const content of ['Bob runs every morning', 'Bob drinks green tea', 'Bob hides cash in the freezer']) {
      ids.push((await maintainer.mneme.remember({ content, ...bobsOwn })).id);
    }
    const close = async () => {
      if (service !== maintainer) await service.mneme.close();
      await maintainer.mneme.close();
    };
    return { quoting, maintainer, service, ids, close };
  }

  const insights = async (engine: MaintenanceEngine) =>
    (await engine.mneme.list({ userId: 'bob', limit: 20 })).memories.filter((memory) => memory.source === 'dream');

  it('stores the insight when nothing is forgotten meanwhile', async () => {
    const opened = await open('quiet.db');
    try {
      await opened.maintainer.mneme.maintain({ tasks: ['dream'] });
      expect((await insights(opened.maintainer)).length).toBe(1);
    } finally {
      await opened.close();
    }
  });

  it('stores no insight quoting a memory Bob forgot while the dreamer reflected', async () => {
    const opened = await open('forgot.db');
    try {
      const bob = opened.service.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
      const freezer = opened.ids[2] ?? 0;
      opened.quoting.during(() => bob.forget({ id: freezer }));
      await opened.maintainer.mneme.maintain({ tasks: ['dream'] });

      const bobs = opened.maintainer.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
      const found = await bobs.recall({ query: 'cash freezer' });
      expect(found.hits.map((hit) => hit.memory.content).join('\n')).not.toContain('freezer');
    } finally {
      await opened.close();
    }
  });
});
