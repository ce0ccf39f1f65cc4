import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import type { EmbeddingModel } from '../src/models/embedding-model.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack25-lease-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const opened: Mneme[] = [];
afterEach(async () => {
  for (const mneme of opened.splice(0)) await mneme.close();
  vi.useRealTimers();
});
const quiet = { warn: () => {}, info: () => {} };

/** The fake model as a provider would be (not in process: each step's model calls come before its commit), held by `gate` from its `holdFrom`-th call. */
function heldModel(gate: Promise<void>, holdFrom: number): { model: EmbeddingModel; calls: () => number } {
  const fake = createFakeEmbeddingModel({ dimensions: 8 });
  let calls = 0;
  return {
    calls: () => calls,
    model: {
      modelId: fake.modelId,
      dimensions: 8,
      async embed(texts, purpose) {
        calls++;
        if (calls >= holdFrom) await gate;
        return fake.embed(texts, purpose);
      },
    },
  };
}

/**
 * Attack 25 (time), held up: the SQLite extraction lease expires by the machine's clock (ADR 6). A process extracting
 * a message when the system clock jumps an hour forward holds a lease that looks expired to a second process on the
 * file, which takes it and extracts the message. The first process's late step writes nothing: it is fenced (the
 * lease's owner and the watermark are checked in its transaction), and its facts are reconciled with the memories that
 * already cite the message (ADR 6). Either keeps the message extracted once: with the fence taken out of
 * `sqlite-extraction-store.ts` this test still passes, so it holds the promise, not the fence alone.
 */
describe('a forward jump of the system clock while a process extracts', () => {
  it('lets a second process take the lease, and the message is still extracted once', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-06-01T10:00:00.000Z') });
    const path = join(folder, 'jump.db');
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = heldModel(gate, 1);
    const first = await createMneme({ path, embedder: slow.model, backfill: false, logger: quiet });
    opened.push(first);
    await first.ingest({
      channelId: 'ops',
      sender: 'ann',
      senderName: 'Ann',
      content: 'I live in Lisbon and I work as a baker.',
    });
    // The first process is in the message's step, waiting for its model, holding the lease.
    for (let wait = 0; slow.calls() === 0 && wait < 400; wait++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(slow.calls()).toBeGreaterThan(0);

    vi.setSystemTime(Date.now() + 60 * 60_000);
    const second = await createMneme({
      path,
      embedder: heldModel(Promise.resolve(), 1).model,
      backfill: false,
      logger: quiet,
    });
    opened.push(second);
    await second.whenIdle();
    const taken = await second.list({ userId: 'ann', limit: 50 });
    expect(taken.memories.length).toBeGreaterThan(0);

    release();
    await first.whenIdle();
    const after = await first.list({ userId: 'ann', limit: 50 });
    const contents = after.memories.map((memory) => memory.content);
    expect(new Set(contents).size).toBe(contents.length);
    expect(after.memories.map((memory) => memory.id).sort()).toEqual(taken.memories.map((memory) => memory.id).sort());
    // The first process's late step wrote nothing: each memory has its one version, the second process's create.
    for (const memory of after.memories) {
      expect((await first.history(memory.id)).map((version) => version.action)).toEqual(['create']);
    }
  }, 60_000);
});
