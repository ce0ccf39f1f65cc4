import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  type MaintenanceEngine,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * A recall records its retrieval of each hit (`touch`): the access count, the time, and the reinforcement the decay
 * policy computes from the memory as the recall read it, written as absolute values. Under importance steps (the
 * memo-rag preset) the reinforcement is an importance. An importance Bob set after the recall read the memory and
 * before its touch was written (another process, or the touch kept while the database was busy and written later)
 * was replaced by the reinforcement of the importance before his edit: his acknowledged edit lost.
 */

const start = '2024-06-01T00:00:00.000Z';

interface Pair {
  reader: MaintenanceEngine;
  editor: MaintenanceEngine;
  memory: number;
}

/** SQLite: two engines on one file. PostgreSQL: one engine, the edit another request of it. */
async function openPair(store: EngineStore, path: string): Promise<Pair> {
  const policy = { decay: 'importance-steps' as const };
  const reader = await openMaintenanceEngine({ store, path, start, policy });
  const editor = store === 'sqlite' ? await openMaintenanceEngine({ store, path, start, policy }) : reader;
  const bob = reader.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
  const memory = (await bob.remember({ content: 'My locker code is 4471', importance: 0.6 })).id;
  return { reader, editor, memory };
}

/** Runs `write` (the editor's) once, right before the reader's first retrieval is written. */
function beforeTouch(pair: Pair, write: () => Promise<unknown>): void {
  const memories = pair.reader.storage.memories;
  const touch = memories.touch.bind(memories);
  let done = false;
  memories.touch = async (touches, at) => {
    if (!done) {
      done = true;
      await write();
    }
    return touch(touches, at);
  };
}

describe.each(engineStores)('a retrieval written after Bob edited the memory, on %s', (store) => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack31c-touch-'));
  beforeAll(() => prepareEngineStore(store), 60_000);
  afterAll(async () => {
    await closeEngineStores();
    rmSync(folder, { recursive: true, force: true });
  });

  const asBob = (engine: MaintenanceEngine) => engine.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });

  it('reinforces the importance when nothing changed it since the recall read it', async () => {
    const pair = await openPair(store, join(folder, 'quiet.db'));
    try {
      await asBob(pair.reader).recall({ query: 'locker code' });
      const [memory] = await pair.reader.storage.memories.get([pair.memory]);
      expect([memory?.importance, memory?.accessCount]).toEqual([0.8, 1]);
    } finally {
      if (pair.editor !== pair.reader) await pair.editor.mneme.close();
      await pair.reader.mneme.close();
    }
  });

  it('keeps the importance Bob set, and counts the retrieval', async () => {
    const pair = await openPair(store, join(folder, 'edited.db'));
    try {
      beforeTouch(pair, () => asBob(pair.editor).update({ id: pair.memory, importance: 0.2 }));
      const found = await asBob(pair.reader).recall({ query: 'locker code' });
      expect(found.hits.map((hit) => hit.memory.id)).toEqual([pair.memory]);
      const [memory] = await pair.reader.storage.memories.get([pair.memory]);
      expect([memory?.importance, memory?.accessCount]).toEqual([0.2, 1]);
    } finally {
      if (pair.editor !== pair.reader) await pair.editor.mneme.close();
      await pair.reader.mneme.close();
    }
  });
});
