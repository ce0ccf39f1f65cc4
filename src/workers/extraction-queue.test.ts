import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import { ExtractionTask } from '../core/ingest/extraction.js';
import type { ExtractionWork } from '../core/ingest/extraction-scheduler.js';
import type { Mneme } from '../core/mneme.js';
import type { ExtractionInput, FactExtractor } from '../core/ports/fact-extractor.js';
import { createOfflineExtractor } from '../models/offline/offline-extractor.js';
import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';
import { createFixedClock } from '../testing.js';
import { createExtractionQueue, EXTRACTION_QUEUE_CAPACITY } from './extraction-queue.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-worker-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const silent = { warn: () => {}, info: () => {} };
const clock = createFixedClock('2024-06-15T12:00:00.000Z');

/**
 * The offline extractor, recording every message it is given; `holdAt(n)` makes the n-th call
 * wait until `release()`, so a test can act while extraction is mid-way.
 */
function recordingExtractor() {
  const inner = createOfflineExtractor();
  const messages: string[] = [];
  let holdAtCall = 0;
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const extractor: FactExtractor = {
    id: 'recording',
    async extract(input: ExtractionInput) {
      messages.push(input.userMessage);
      if (messages.length === holdAtCall) await gate;
      return inner.extract(input);
    },
  };
  return {
    extractor,
    messages,
    holdAt(call: number) {
      holdAtCall = call;
    },
    release: () => release(),
  };
}

const fact = (index: number) => `I collect vintage postcards from city number ${index}`;

/** Every source message id cited by the active extracted memories (not exchange turns), with how often. */
async function citations(mneme: Mneme): Promise<number[]> {
  const { memories } = await mneme.list({ limit: 500 });
  return memories
    .filter((memory) => memory.category !== 'exchange')
    .flatMap((memory) => memory.sourceMessageIds)
    .sort((a, b) => a - b);
}

describe('the extraction queue', () => {
  it('drops a job when 64 are waiting, never making the caller wait, and the catch-up pass extracts what it skipped', async () => {
    const recording = recordingExtractor();
    const mneme = await createMneme({ path: ':memory:', clock, logger: silent, extractor: recording.extractor });
    try {
      await mneme.whenIdle();
      recording.holdAt(1);
      const first = await mneme.ingest({ channelId: 'channel-0', sender: 'oz', content: fact(0) });
      await vi.waitFor(() => expect(recording.messages).toHaveLength(1));
      const results = [first];
      for (let index = 1; index <= 70; index++) {
        results.push(await mneme.ingest({ channelId: `channel-${index}`, sender: 'oz', content: fact(index) }));
      }
      const queued = results.slice(1).map((result) => result.queued);
      expect(queued.filter(Boolean)).toHaveLength(EXTRACTION_QUEUE_CAPACITY);
      expect(queued.slice(EXTRACTION_QUEUE_CAPACITY)).toEqual([false, false, false, false, false, false]);
      expect(recording.messages).toHaveLength(1);

      recording.release();
      await mneme.whenIdle();
      expect([...recording.messages].sort()).toEqual(Array.from({ length: 71 }, (_, index) => fact(index)).sort());
      const ids = results.map((result) => result.messages[0]?.id);
      expect(await citations(mneme)).toEqual(ids);
    } finally {
      await mneme.close();
    }
  });

  it('stops after the message in progress; a restart extracts the rest, each message exactly once', async () => {
    const path = join(folder, 'restart.db');
    const before = recordingExtractor();
    const first = await createMneme({ path, clock, logger: silent, extractor: before.extractor });
    before.holdAt(5);
    const ids: number[] = [];
    for (let index = 0; index < 10; index++) {
      const { messages } = await first.ingest({ channelId: 'room', sender: 'oz', content: fact(index) });
      ids.push(messages[0]?.id ?? 0);
    }
    await vi.waitFor(() => expect(before.messages).toHaveLength(5));
    const closing = first.close();
    before.release();
    await closing;
    expect(before.messages).toEqual([0, 1, 2, 3, 4].map(fact));

    const after = recordingExtractor();
    const second = await createMneme({ path, clock, logger: silent, extractor: after.extractor });
    try {
      await second.whenIdle();
      expect(after.messages).toEqual([5, 6, 7, 8, 9].map(fact));
      expect(await citations(second)).toEqual(ids);
    } finally {
      await second.close();
    }
  });

  it('changes nothing when messages are extracted again after a crash lost the watermark', async () => {
    const path = join(folder, 'crash.db');
    const first = await createMneme({ path, clock, logger: silent });
    const messages = [
      'I collect vintage postcards from Lisbon. My sister lives in Oslo.',
      'I play the cello in an orchestra. My brother works as a pilot.',
      'I grow tomatoes on my balcony. My mother teaches chemistry.',
      'I collect vintage postcards from Lisbon and Porto.',
    ];
    for (const userMessage of messages) {
      await first.ingestExchange({
        channelId: 'room',
        userId: 'oz',
        userName: 'Oz',
        userMessage,
        assistantReply: 'How lovely.',
      });
    }
    await first.whenIdle();
    const snapshot = async (mneme: Mneme) => {
      const { memories } = await mneme.list({ limit: 500, archived: 'include' });
      return Promise.all(
        memories.map(async (memory) => ({
          memory,
          versions: (await mneme.history(memory.id)).length,
          links: (await mneme.links(memory.id)).length,
        })),
      );
    };
    const expected = await snapshot(first);
    expect(expected.filter((entry) => entry.memory.category === 'exchange')).toHaveLength(4);
    const facts = expected.filter((entry) => entry.memory.category !== 'exchange');
    expect(facts).toHaveLength(6);
    expect(facts.some((entry) => entry.versions === 2 && entry.links > 0)).toBe(true);
    await first.close();

    const storage = createSqliteStorage({ path });
    await storage.maintenanceState.set('room', ExtractionTask.channel, { watermark: 0 });
    await storage.close();

    const recording = recordingExtractor();
    const second = await createMneme({ path, clock, logger: silent, extractor: recording.extractor });
    try {
      await second.whenIdle();
      expect(recording.messages).toEqual(messages);
      expect(await snapshot(second)).toEqual(expected);
    } finally {
      await second.close();
    }
  });

  it('reports a failed job and carries on; the next catch-up pass retries it', async () => {
    const warnings: string[] = [];
    const attempts: string[] = [];
    let failing = true;
    const work: ExtractionWork = {
      async processChannel(channelId) {
        attempts.push(channelId);
        if (channelId === 'bad' && failing) throw new Error('model unreachable');
      },
      pendingChannels: async () => (failing ? [] : ['bad']),
    };
    const queue = createExtractionQueue(work, { logger: { warn: (message) => warnings.push(message) } });
    queue.schedule('bad');
    queue.schedule('good');
    await queue.whenIdle();
    expect(attempts).toEqual(['bad', 'good']);
    expect(warnings).toEqual([expect.stringContaining('extraction of channel bad failed')]);
    failing = false;
    await queue.whenIdle();
    expect(attempts).toEqual(['bad', 'good', 'bad']);
    await queue.close();
    expect(queue.schedule('late')).toBe(false);
    expect(queue.status()).toEqual({ queued: 0, dropped: 0, running: false });
  });

  it('queues a channel once while it waits', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const attempts: string[] = [];
    const queue = createExtractionQueue(
      {
        async processChannel(channelId) {
          attempts.push(channelId);
          if (channelId === 'first') await held;
        },
        pendingChannels: async () => [],
      },
      { capacity: 2 },
    );
    await queue.whenIdle();
    queue.schedule('first');
    expect([queue.schedule('a'), queue.schedule('a'), queue.schedule('b'), queue.schedule('c')]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(queue.status()).toMatchObject({ queued: 2, dropped: 1 });
    release();
    await queue.whenIdle();
    expect(attempts).toEqual(['first', 'a', 'b']);
    await queue.close();
  });

  it('starts its first catch-up pass on a later turn of the event loop than the one that created it', async () => {
    const events: string[] = [];
    const queue = createExtractionQueue({
      processChannel: async () => {},
      pendingChannels: async () => {
        events.push('catch-up pass');
        return [];
      },
    });
    await Promise.resolve();
    events.push('creator carries on');
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(['creator carries on', 'catch-up pass']);
    await queue.close();
  });

  it("gives channels turns: one scheduled behind a long backlog is extracted before that backlog's end", async () => {
    let backlog = 100_000;
    const extracted: string[] = [];
    const queue = createExtractionQueue(
      {
        async processChannel(channelId, signal, turn) {
          if (channelId === 'quiet') {
            extracted.push(`quiet, with ${backlog > 0 ? 'messages' : 'nothing'} left in busy`);
            return;
          }
          // One message a batch: the turn's end stops it after the one in progress.
          while (backlog > 0 && !signal.aborted && !turn?.aborted) {
            await new Promise((resolve) => setImmediate(resolve));
            backlog--;
          }
          if (backlog === 0) extracted.push('busy');
        },
        pendingChannels: async () => [],
      },
      { turnMs: 5 },
    );
    queue.schedule('busy');
    queue.schedule('quiet');
    await vi.waitFor(() => expect(extracted.length).toBeGreaterThan(0), { timeout: 10_000 });
    await queue.close();
    expect(extracted).toEqual(['quiet, with messages left in busy']);
  });

  it('ends a turn apart from a stop: the work sees its turn aborted and its stop signal not, until close', async () => {
    const seen: Array<{ stop: boolean; turn: boolean | undefined }> = [];
    const queue = createExtractionQueue(
      {
        async processChannel(_channelId, signal, turn) {
          // Longer than the turn: the turn's timer fires while the work runs.
          await new Promise((resolve) => setTimeout(resolve, 30));
          seen.push({ stop: signal.aborted, turn: turn?.aborted });
        },
        pendingChannels: async () => [],
      },
      { turnMs: 5 },
    );
    queue.schedule('busy');
    await vi.waitFor(() => expect(seen.length).toBeGreaterThan(0), { timeout: 10_000 });
    await queue.close();
    expect(seen[0]).toEqual({ stop: false, turn: true });
  });

  it('retries a failed channel on its own after a pause, without new messages or whenIdle', async () => {
    const attempts: string[] = [];
    const warnings: string[] = [];
    let extracted = false;
    const queue = createExtractionQueue(
      {
        async processChannel(channelId) {
          attempts.push(channelId);
          if (attempts.length === 1) throw new Error('recording the watermark: the database is busy');
          extracted = true;
        },
        pendingChannels: async () => (extracted ? [] : ['late']),
      },
      { retryDelayMs: 10, logger: { warn: (message) => warnings.push(message) } },
    );
    await vi.waitFor(() => expect(extracted).toBe(true));
    expect(attempts).toEqual(['late', 'late']);
    expect(warnings).toEqual([expect.stringContaining('extraction of channel late failed')]);
    await queue.close();
  });
});
