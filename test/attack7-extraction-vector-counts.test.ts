import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import { resolvePolicy } from '../src/core/policy.js';
import type { FactExtractor } from '../src/core/ports/fact-extractor.js';
import type { IngestExchangeInput, IngestInput } from '../src/core/schemas.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { createFixedClock } from '../src/testing.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack7-counts-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const users = ['ana', 'ben', 'cleo', 'dov'];
const channels = ['room-a', 'room-b', 'dm-ana'];
const cities = 'Lisbon Oslo Porto Kyoto Lima Quito'.split(' ');
const start = Date.parse('2024-03-01T10:00:00Z');

function history(count: number): Array<IngestInput | IngestExchangeInput> {
  return Array.from({ length: count }, (_, index) => {
    const user = (index * 7) % users.length;
    const channelId = channels[index % channels.length] as string;
    const sender = channelId === 'dm-ana' ? 'ana' : (users[user] as string);
    const city = cities[(index + user) % cities.length];
    const content = [
      `I live in ${city} with my two cats number ${index}.`,
      `My brother works as a pilot in ${city} since ${1990 + index}.`,
      `I collect old maps from ${city}, map ${index}.`,
    ][index % 3] as string;
    const createdAt = new Date(start + index * 3_600_000).toISOString();
    if (index % 4 === 1) {
      return { channelId, userId: sender, userMessage: content, assistantReply: `Noted (${index}).`, createdAt };
    }
    return { channelId, sender, senderName: sender.toUpperCase(), content, createdAt };
  });
}

/** Each owner's vector count as kept (`vector_owners`) and as recounted from the memories with a vector. */
function counts(path: string): { kept: Record<string, number>; recounted: Record<string, number> } {
  const raw = new Database(path, { readonly: true });
  try {
    const kept = Object.fromEntries(
      raw
        .prepare<[], [string, number]>('SELECT owner, vectors FROM vector_owners WHERE vectors > 0 ORDER BY owner')
        .raw()
        .all(),
    );
    const recounted = Object.fromEntries(
      raw
        .prepare<[], [string, number]>(
          'SELECT owner, count(*) FROM memories WHERE embedding_model IS NOT NULL GROUP BY owner ORDER BY owner',
        )
        .raw()
        .all(),
    );
    return { kept, recounted };
  } finally {
    raw.close();
  }
}

describe('attack7: vectors counted per owner by a remembered row id, through rolled-back extraction batches', () => {
  it("keeps every owner's vector count equal to a recount after batches that fail and are extracted again", async () => {
    const path = join(folder, 'counts.db');
    let calls = 0;
    const offline = createOfflineExtractor();
    // Dies at three points, once each: the batch under way rolls back, the next run extracts it again.
    const extractor: FactExtractor = {
      id: 'offline',
      inProcess: true,
      async extract(input) {
        calls++;
        if (calls === 5 || calls === 23 || calls === 41) throw new Error('the extractor died');
        return offline.extract(input);
      },
    };
    const storage = createSqliteStorage({ path });
    const embedder = createFakeEmbeddingModel();
    await storage.configureVectors({ model: embedder.modelId, dimensions: embedder.dimensions });
    const mneme = createEngine({
      storage,
      embedder,
      clock: createFixedClock('2024-06-01T09:00:00Z'),
      logger: { warn: () => undefined },
      policy: resolvePolicy({ ingest: { extractionBatchMessages: 16, extractionBatchMs: 60_000 } }),
      summariser: createOfflineEpisodeSummariser(),
      merger: createOfflineMemoryMerger(),
      dreamer: null,
      extractor,
    });
    try {
      await mneme.ingestMany(history(90));
      let failures = 0;
      for (let tries = 0; tries < 10; tries++) {
        try {
          await mneme.whenIdle();
          break;
        } catch {
          failures++;
          await mneme.remember({ content: `written between failed batches ${tries}` });
        }
      }
      expect(failures).toBeGreaterThan(0);
      const { kept, recounted } = counts(path);
      expect(Object.keys(recounted).length).toBeGreaterThan(2);
      expect(kept).toEqual(recounted);
    } finally {
      await mneme.close();
    }
  }, 120_000);
});
