import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openMaintenanceEngine } from './maintenance-engine.js';

/**
 * A user changes only the memories of the spaces it reads: `update`, `forget` and `restore` check that the memory is
 * of one of the viewer's owner keys, then write. An audience change of another process (ADR 5) that moved the memory
 * into the room of a channel Bob was just removed from, between that check and the write, let Bob's key edit, forget
 * or restore a memory of a room he no longer belongs to, and answered him with it as it now is there.
 */

type Action = 'update' | 'forget' | 'restore';

describe('Bob changing his memory while an audience change moves it out of the room he names', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack31c-move-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  async function open(name: string, action: Action) {
    const path = join(folder, name);
    const service = await openMaintenanceEngine({ path });
    const other = await openMaintenanceEngine({ path });
    await service.mneme.putChannel({ id: 'team', members: ['bob', 'eve'] });
    const bob = service.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
    const memory = (await bob.remember({ content: 'The launch moved to Friday', scope: 'room', channelId: 'team' })).id;
    if (action === 'restore') await bob.forget({ id: memory, viewer: { channelId: 'team' } });
    // Another process's audience change moves it, right before Bob's write.
    const memories = service.storage.memories;
    const write = action === 'update' ? 'update' : action === 'forget' ? 'archive' : 'restore';
    const original = memories[write].bind(memories) as (...args: unknown[]) => Promise<unknown>;
    let moved = false;
    (memories as unknown as Record<string, unknown>)[write] = async (...args: unknown[]) => {
      if (!moved) {
        moved = true;
        await other.storage.memories.moveTo(
          memory,
          { scope: 'room', channelId: 'secret' },
          { at: other.clock.now(), actor: 'audience', reason: 'test move' },
        );
      }
      return original(...args);
    };
    const close = async () => {
      await other.mneme.close();
      await service.mneme.close();
    };
    return { service, bob, memory, close };
  }

  for (const action of ['update', 'forget', 'restore'] as const) {
    it(`refuses ${action} as a memory Bob may not see, and leaves it as it is`, async () => {
      const opened = await open(`${action}.db`, action);
      try {
        const [before] = await opened.service.storage.memories.get([opened.memory]);
        const viewer = { channelId: 'team' };
        const attempt =
          action === 'update'
            ? opened.bob.update({ id: opened.memory, content: 'Bob was here', viewer })
            : action === 'forget'
              ? opened.bob.forget({ id: opened.memory, viewer })
              : opened.bob.restore({ id: opened.memory, viewer });
        await expect(attempt).rejects.toMatchObject({ code: 'NOT_FOUND' });
        const [after] = await opened.service.storage.memories.get([opened.memory]);
        expect([after?.channelId, after?.content, after?.archivedAt]).toEqual([
          'secret',
          before?.content,
          before?.archivedAt,
        ]);
      } finally {
        await opened.close();
      }
    });
  }
});
