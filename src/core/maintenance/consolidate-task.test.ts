import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { consolidateOffline, type MaintenanceEngine, openMaintenanceEngine } from '../../../test/maintenance-engine.js';
import { createSeededRandom } from '../../bench/seeded-random.js';
import { createFakeEmbeddingModel } from '../../models/fake/fake-embedding-model.js';
import { openSqliteDatabase } from '../../storage/sqlite/sqlite-database.js';
import type { RememberInput } from '../schemas.js';
import { jaccard, wordSet } from '../similarity.js';
import type { Memory } from '../types.js';
import {
  CANDIDATE_TERMS,
  CONSOLIDATION_COSINE,
  CONSOLIDATION_JACCARD,
  type ConsolidateOptions,
  cosine,
} from './consolidate-task.js';

const start = '2024-06-01T10:00:00.000Z';
const folder = mkdtempSync(join(tmpdir(), 'mneme-consolidate-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
let files = 0;
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

async function open(withVectors = false) {
  const engine = await openMaintenanceEngine({
    start,
    ...(withVectors ? { embedder: createFakeEmbeddingModel({ dimensions: 64 }) } : {}),
  });
  engines.push(engine);
  return engine;
}

async function consolidate(engine: MaintenanceEngine) {
  const report = await engine.mneme.maintain({ tasks: ['consolidate'] });
  if (!report.consolidate) throw new Error('no consolidation report');
  return report.consolidate;
}

async function active(engine: MaintenanceEngine): Promise<Memory[]> {
  return (await engine.mneme.list({ limit: 500 })).memories.reverse();
}

describe('the consolidation task', () => {
  it('merges long near-duplicates found by their rarest words', async () => {
    const engine = await open();
    const text =
      'on the first monday of every month the platform team reviews quarterly infrastructure costs with finance and the accounting department';
    const first = await engine.mneme.remember({ content: text });
    await engine.mneme.remember({ content: `${text} before the board meeting` });
    expect(wordSet(first.content).size).toBeGreaterThan(CANDIDATE_TERMS);
    expect(await consolidate(engine)).toMatchObject({ clusters: 1, merged: 2 });
  });

  it('merges a Jaccard cluster into one memory that keeps its sources, links and history', async () => {
    const engine = await open();
    const oz = { scope: 'personal', userId: 'oz', category: 'preference' } as const;
    const first = await engine.mneme.remember({ content: 'Oz prefers dark mode in the editor', ...oz });
    const second = await engine.mneme.remember({ content: 'Oz prefers dark mode in every editor', ...oz });
    const unrelated = await engine.mneme.remember({ content: 'Oz has a cat named Pixel', ...oz });
    expect(jaccard(first.content, second.content)).toBeGreaterThanOrEqual(CONSOLIDATION_JACCARD);

    expect(await consolidate(engine)).toEqual({ checked: 3, clusters: 1, merged: 2, skipped: null });
    const [cat, merged] = await active(engine);
    expect(cat?.id).toBe(unrelated.id);
    expect(merged).toMatchObject({
      content: 'Oz prefers dark mode in every editor',
      scope: 'personal',
      userId: 'oz',
      category: 'preference',
      source: 'consolidation',
      sourceIds: [first.id, second.id],
    });
    const mergedId = merged?.id ?? 0;
    expect(await engine.mneme.history(mergedId)).toMatchObject([
      {
        version: 1,
        action: 'merge',
        actor: 'maintenance',
        reason: `merged from #${first.id}, #${second.id} (jaccard)`,
      },
    ]);
    for (const original of [first, second]) {
      expect((await engine.mneme.get(original.id)).archivedAt).not.toBeNull();
      expect((await engine.mneme.history(original.id)).at(-1)).toMatchObject({
        action: 'archive',
        reason: `merged into #${mergedId}`,
      });
    }
    const links = await engine.mneme.links(mergedId);
    expect(links.map((link) => [link.sourceId, link.targetId, link.type])).toEqual([
      [mergedId, first.id, 'consolidated'],
      [mergedId, second.id, 'consolidated'],
    ]);

    // Link cleanup removes links to archived memories, but not the record of what a merge replaced.
    await engine.mneme.maintain({ tasks: ['link'] });
    expect(await engine.mneme.links(mergedId)).toHaveLength(2);
  });

  it('looks only at memories newer than its watermark (a merged memory is new on the next run)', async () => {
    const engine = await open();
    await engine.mneme.remember({ content: 'The release train leaves every second Tuesday' });
    await engine.mneme.remember({ content: 'The release train leaves every Tuesday' });
    expect(await consolidate(engine)).toMatchObject({ checked: 2, clusters: 1 });
    expect(await consolidate(engine)).toMatchObject({ checked: 1, clusters: 0 });
    expect(await consolidate(engine)).toMatchObject({ checked: 0, clusters: 0 });
    await engine.mneme.remember({ content: 'The release train leaves every second Tuesday at noon' });
    expect(await consolidate(engine)).toMatchObject({ checked: 1, clusters: 1, merged: 2 });
    expect((await active(engine)).map((memory) => memory.content)).toEqual([
      'The release train leaves every second Tuesday at noon',
    ]);
  });

  it('never merges across owners, users or sectors, nor pinned memories, episodes or conversation turns', async () => {
    const engine = await open();
    const text = 'The quarterly planning meeting moved to Thursday';
    await engine.mneme.remember({ content: text, scope: 'personal', userId: 'oz' });
    await engine.mneme.remember({ content: text, scope: 'personal', userId: 'mia' });
    await engine.mneme.remember({ content: text, scope: 'room', channelId: 'ops' });
    await engine.mneme.remember({ content: text, scope: 'project', projectId: 'apollo' });
    await engine.mneme.remember({ content: text });
    await engine.mneme.remember({ content: text, category: 'event' });
    await engine.mneme.remember({ content: `${text}!`, pinned: true });
    await engine.mneme.remember({ content: `${text}.`, category: 'episode' });
    await engine.mneme.remember({ content: `${text}.`, category: 'episode' });
    await engine.mneme.remember({ content: `Oz: ${text}`, category: 'exchange' });
    await engine.mneme.remember({ content: `Mia: ${text}`, category: 'exchange' });

    expect(await consolidate(engine)).toMatchObject({ clusters: 0, merged: 0 });
    expect(await active(engine)).toHaveLength(11);
  });

  it('never merges facts about different people, however alike, and still merges those about one', async () => {
    const engine = await open(true);
    const oz = { scope: 'personal', userId: 'oz', category: 'fact' } as const;
    const sam = await engine.mneme.remember({ content: "Sam's team uses PostgreSQL 15 in production", ...oz });
    const lee = await engine.mneme.remember({ content: "Lee's team uses PostgreSQL 15 in production", ...oz });
    const leeChen = await engine.mneme.remember({ content: 'Lee Chen runs PostgreSQL 15 in production', ...oz });
    const samAgain = await engine.mneme.remember({
      content: "sam's team uses PostgreSQL 15 in production daily",
      ...oz,
    });
    expect(jaccard(sam.content, lee.content)).toBeGreaterThanOrEqual(CONSOLIDATION_JACCARD);

    expect(await consolidate(engine)).toMatchObject({ clusters: 1, merged: 2 });
    const remaining = await active(engine);
    expect(remaining.map((memory) => memory.id).slice(0, 2)).toEqual([lee.id, leeChen.id]);
    expect(remaining[2]).toMatchObject({ source: 'consolidation', sourceIds: [sam.id, samAgain.id] });
  });

  it('keeps every statement of a merged cluster findable, also one whose words the others hold in another order', async () => {
    const engine = await open();
    const oz = { scope: 'personal', userId: 'oz', category: 'fact' } as const;
    await engine.mneme.remember({ content: 'Sam likes tea. Lee likes coffee.', ...oz });
    await engine.mneme.remember({ content: 'Sam likes coffee', ...oz });
    await engine.mneme.remember({ content: 'The team standup moved from Monday to Wednesday', ...oz });
    await engine.mneme.remember({ content: 'The team standup moved from Wednesday to Monday', ...oz });

    expect(await consolidate(engine)).toMatchObject({ clusters: 2, merged: 4 });
    const contents = (await active(engine)).map((memory) => memory.content);
    expect(contents).toEqual([
      'Sam likes tea. Lee likes coffee. Sam likes coffee.',
      'The team standup moved from Wednesday to Monday. The team standup moved from Monday to Wednesday.',
    ]);
    const found = await engine.mneme.recall({ query: 'does Sam like coffee', viewer: { userId: 'oz' } });
    expect(found.hits[0]?.memory.content).toContain('Sam likes coffee');
  });

  it('never merges a statement with its opposite, however alike their words', async () => {
    const engine = await open();
    const oz = { scope: 'personal', userId: 'oz', category: 'fact' } as const;
    const likes = await engine.mneme.remember({ content: 'Oz likes strong coffee in the morning', ...oz });
    const not = await engine.mneme.remember({ content: 'Oz does not like strong coffee in the morning', ...oz });
    const again = await engine.mneme.remember({ content: 'Oz likes strong coffee in the morning a lot', ...oz });
    expect(jaccard(likes.content, not.content)).toBeGreaterThanOrEqual(CONSOLIDATION_JACCARD);

    expect(await consolidate(engine)).toMatchObject({ clusters: 1, merged: 2 });
    const remaining = await active(engine);
    expect(remaining[0]).toMatchObject({ id: not.id, content: not.content });
    expect(remaining[1]).toMatchObject({ source: 'consolidation', sourceIds: [likes.id, again.id] });
  });

  it('merges negated statements that say the same, each saying more than one negation', async () => {
    const engine = await open();
    const oz = { scope: 'personal', userId: 'oz', category: 'fact' } as const;
    const meat = await engine.mneme.remember({ content: 'Oz does not eat red meat', ...oz });
    const both = await engine.mneme.remember({ content: 'Oz does not eat red meat and never drinks wine', ...oz });

    expect(await consolidate(engine)).toMatchObject({ clusters: 1, merged: 2 });
    expect(await active(engine)).toEqual([
      expect.objectContaining({ source: 'consolidation', sourceIds: [meat.id, both.id] }),
    ]);
  });

  it('never merges into one memory two statements that say the opposite of each other, neither of the first', async () => {
    const engine = await open();
    const oz = { scope: 'personal', userId: 'oz', category: 'fact' } as const;
    const home = await engine.mneme.remember({ content: 'Oz drinks strong coffee every morning at home', ...oz });
    const notWork = await engine.mneme.remember({
      content: 'Oz drinks strong coffee every morning, not at work',
      ...oz,
    });
    const work = await engine.mneme.remember({ content: 'Oz drinks strong coffee every morning at work', ...oz });

    await consolidate(engine);
    const remaining = await active(engine);
    const merged = remaining.find((memory) => memory.source === 'consolidation');
    expect(merged?.sourceIds).toHaveLength(2);
    expect(merged?.sourceIds).toContain(home.id);
    const left = merged?.sourceIds.includes(work.id) ? notWork : work;
    expect(remaining.map((memory) => memory.id)).toContain(left.id);
  });

  it('merges pairs with cosine >= 0.92 among the most recent memories that Jaccard alone would miss', async () => {
    const engine = await open(true);
    const left = await engine.mneme.remember({ content: 'kestrel kestrel kestrel kestrel kestrel kestrel alpha' });
    const right = await engine.mneme.remember({ content: 'kestrel kestrel kestrel kestrel kestrel kestrel beta' });
    const model = createFakeEmbeddingModel({ dimensions: 64 });
    const [a, b] = await model.embed([left.content, right.content], 'document');
    expect(jaccard(left.content, right.content)).toBeLessThan(CONSOLIDATION_JACCARD);
    expect(cosine(a ?? new Float32Array(), b ?? new Float32Array())).toBeGreaterThanOrEqual(CONSOLIDATION_COSINE);

    expect(await consolidate(engine)).toMatchObject({ checked: 2, clusters: 1, merged: 2 });
    const [merged] = await active(engine);
    expect(merged).toMatchObject({ source: 'consolidation', sourceIds: [left.id, right.id] });
    expect(merged?.embeddingModel).toBe('fake-64');
    expect((await engine.mneme.history(merged?.id ?? 0))[0]?.reason).toMatch(/\(cosine\)$/);
  });

  it('keeps the provenance of earlier merges in source_ids', async () => {
    const engine = await open();
    const a = await engine.mneme.remember({ content: 'Mia runs the Berlin office' });
    const b = await engine.mneme.remember({ content: 'Mia runs the Berlin office now' });
    await consolidate(engine);
    const c = await engine.mneme.remember({ content: 'Mia runs the Berlin office since May' });
    await consolidate(engine);
    const [merged] = await active(engine);
    const [firstMerge] = (await engine.mneme.list({ archived: 'only', limit: 10 })).memories.filter(
      (memory) => memory.source === 'consolidation',
    );
    expect(merged?.sourceIds).toEqual([a.id, b.id, c.id, firstMerge?.id].sort((x, y) => (x ?? 0) - (y ?? 0)));
  });

  it('merges the same clusters whether or not the near-duplicate index picks the memories to search for', async () => {
    const inputs = nearDuplicateStore(7, 400);
    const more = nearDuplicateStore(8, 120);
    const runs: Array<{ reports: unknown[]; memories: unknown[] }> = [];
    for (const nearDuplicateIndex of ['never', 'always'] as const) {
      const engine = await open();
      for (const input of inputs) await engine.mneme.remember(input);
      const reports = [await consolidateOffline(engine, { nearDuplicateIndex })];
      for (const input of more) await engine.mneme.remember(input);
      reports.push(await consolidateOffline(engine, { nearDuplicateIndex }));
      const memories: Memory[] = [];
      for (let offset = 0; ; offset += 500) {
        const page = (await engine.mneme.list({ archived: 'include', limit: 500, offset })).memories;
        memories.push(...page);
        if (page.length < 500) break;
      }
      runs.push({
        reports,
        memories: memories.map(({ id, content, archivedAt, sourceIds }) => ({ id, content, archivedAt, sourceIds })),
      });
    }
    const [before, after] = runs;
    expect(before?.reports).toMatchObject([{ clusters: expect.any(Number) }, { clusters: expect.any(Number) }]);
    const clusters = (before?.reports ?? []).map((report) => (report as { clusters: number }).clusters);
    expect(clusters[0]).toBeGreaterThan(10);
    expect(clusters[1]).toBeGreaterThan(2);
    expect(after).toEqual(before);
  });

  it('never merges a memory with one merged earlier in the same run, with or without the index', async () => {
    for (const nearDuplicateIndex of ['never', 'always'] as const) {
      const engine = await open();
      await engine.mneme.remember({ content: 'alpha beta gamma delta' });
      await engine.mneme.remember({ content: 'alpha beta gamma epsilon' });
      const late = await engine.mneme.remember({ content: 'delta epsilon alpha zeta eta theta' });
      expect(jaccard(late.content, 'alpha beta gamma delta')).toBeLessThan(CONSOLIDATION_JACCARD);
      expect(jaccard(late.content, 'alpha beta gamma epsilon')).toBeLessThan(CONSOLIDATION_JACCARD);
      expect(await consolidateOffline(engine, { nearDuplicateIndex })).toMatchObject({ clusters: 1, merged: 2 });
    }
  });

  it('merges, through rewrites, owner changes, forgets, restores and purges, as it does reading every text when it reads stored word blocks', async () => {
    const runs: unknown[][] = [];
    let blocksRead = 0;
    for (const wordBlocks of [false, true]) {
      const engine = await openOnFile();
      const options: ConsolidateOptions = { nearDuplicateIndex: 'always', wordBlocks, wordBlockSize: 16 };
      const random = createSeededRandom(11);
      const states: unknown[] = [];
      const round = async (inputs: readonly RememberInput[]) => {
        for (const input of inputs) await engine.mneme.remember(input);
        states.push(await consolidateOffline(engine, options), await everyMemory(engine));
      };
      const someIds = async (count: number) => {
        const latest = await engine.storage.maintenance.latestMemoryId();
        return Array.from({ length: count }, () => 1 + random.below(latest));
      };
      await round(nearDuplicateStore(21, 200, 1000));
      // Older memories reworded into near-duplicates of others (of the new ones of the next run too).
      const texts = nearDuplicateStore(22, 60, 1000);
      for (const [at, id] of (await someIds(30)).entries()) {
        await engine.mneme.update({ id, content: texts[at]?.content ?? 'word1' }).catch(() => null);
      }
      await round(texts.slice(30));
      for (const id of await someIds(10)) await engine.mneme.forget(id).catch(() => null);
      await round(nearDuplicateStore(23, 30, 1000));
      for (const id of await someIds(40)) await engine.mneme.restore(id).catch(() => null);
      await round(nearDuplicateStore(25, 30, 1000));
      engine.sql(`UPDATE memories SET scope = 'room', owner = 'room:ops', channel_id = 'ops'
        WHERE id IN (${(await someIds(15)).join(', ')}) AND scope = 'global'`);
      await round(nearDuplicateStore(26, 30, 1000));
      await engine.mneme.purgeUser('oz');
      await round(nearDuplicateStore(24, 40, 1000));
      await round([]);
      if (wordBlocks)
        blocksRead = Number(engine.sql('SELECT count(*) AS blocks FROM consolidation_word_blocks')[0]?.blocks);
      runs.push(states);
    }
    const [everyText, stored] = runs;
    expect(blocksRead).toBeGreaterThan(8);
    expect((everyText ?? []).filter((_, at) => at % 2 === 0)).toMatchObject(
      Array.from({ length: 7 }, () => ({ clusters: expect.any(Number) })),
    );
    expect(stored).toEqual(everyText);
  }, 120_000);

  it.each([
    ['reworded', 'the release train leaves every tuesday at noon'],
    ['moved to another owner', 'ospreys plunge feet first after trout'],
    ['restored', 'ospreys plunge feet first after trout'],
  ] as const)('compares a memory %s since its word block was written as it is now', async (change, content) => {
    const engine = await openOnFile();
    const options: ConsolidateOptions = { nearDuplicateIndex: 'always', wordBlockSize: 4 };
    const memories: Memory[] = [];
    for (const text of [
      'kestrels hover above motorway verges',
      'herons stalk frogs along canals',
      'falcons stoop onto pigeons downtown',
      'ospreys plunge feet first after trout',
      'plovers pretend broken wings near nests',
      'curlews probe mudflats with curved bills',
      'dunlins wheel together over estuaries',
      'avocets sweep upturned beaks through brine',
    ]) {
      memories.push(await engine.mneme.remember({ content: text }));
    }
    const changed = memories[3]?.id ?? 0;
    if (change === 'restored') await engine.mneme.forget(changed);
    expect(await consolidateOffline(engine, options)).toMatchObject({ clusters: 0 });
    expect(engine.sql('SELECT first_id, last_id FROM consolidation_word_blocks')).toHaveLength(2);
    if (change === 'reworded') await engine.mneme.update({ id: changed, content });
    if (change === 'restored') await engine.mneme.restore(changed);
    if (change === 'moved to another owner') {
      engine.sql(`UPDATE memories SET scope = 'room', owner = 'room:ops', channel_id = 'ops' WHERE id = ${changed}`);
    }
    const room = change === 'moved to another owner' ? ({ scope: 'room', channelId: 'ops' } as const) : {};
    await engine.mneme.remember({ content: `${content} again`, ...room });
    expect(await consolidateOffline(engine, options)).toMatchObject({ clusters: 1, merged: 2 });
    expect((await engine.mneme.get(changed)).archivedAt).not.toBeNull();
  });
});

it('reads the blocks past a block with no active memory', async () => {
  const engine = await openOnFile();
  const options: ConsolidateOptions = { nearDuplicateIndex: 'always', wordBlockSize: 4 };
  const memories: Memory[] = [];
  for (let at = 0; at < 12; at++) {
    memories.push(await engine.mneme.remember({ content: `kestrel${at} heron${at} falcon${at} osprey${at}` }));
  }
  for (const memory of memories.slice(4, 8)) await engine.mneme.forget(memory.id);
  expect(await consolidateOffline(engine, options)).toMatchObject({ clusters: 0 });
  expect(engine.sql('SELECT first_id FROM consolidation_word_blocks ORDER BY first_id')).toEqual([
    { first_id: 1 },
    { first_id: 9 },
  ]);
  await engine.mneme.remember({ content: 'kestrel1 heron1 falcon1 osprey1 plover' });
  await engine.mneme.remember({ content: 'kestrel10 heron10 falcon10 osprey10 plover' });
  expect(await consolidateOffline(engine, options)).toMatchObject({ clusters: 2, merged: 4 });
});

/** An engine on its own database file, with a second connection to run SQL on it (rows back). */
async function openOnFile() {
  const path = join(folder, `consolidate-${files++}.db`);
  const engine = await openMaintenanceEngine({ path, start });
  engines.push(engine);
  const sql = (text: string): Array<Record<string, unknown>> => {
    const raw = openSqliteDatabase({ path });
    try {
      const statement = raw.prepare(text);
      if (statement.reader) return statement.all() as Array<Record<string, unknown>>;
      statement.run();
      return [];
    } finally {
      raw.close();
    }
  };
  return { ...engine, sql };
}

/** Every memory, archived ones too, as consolidation leaves them. */
async function everyMemory(engine: MaintenanceEngine) {
  const memories: Memory[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = (await engine.mneme.list({ archived: 'include', limit: 500, offset })).memories;
    memories.push(...page);
    if (page.length < 500) break;
  }
  return memories.map(({ id, content, scope, channelId, archivedAt, sourceIds }) => ({
    id,
    content,
    scope,
    channelId,
    archivedAt,
    sourceIds,
  }));
}

/**
 * Memories over a small vocabulary in three owners and two sectors, a third of them an earlier one with
 * a word or two changed (near-duplicates, some of them past the Jaccard threshold, some not).
 */
function nearDuplicateStore(seed: number, count: number, words = 150): RememberInput[] {
  const random = createSeededRandom(seed);
  const vocabulary = Array.from({ length: words }, (_, index) => `word${index}`);
  const word = () => vocabulary[Math.floor(vocabulary.length * random.next() ** 2)] ?? 'word0';
  const owners = [{}, { scope: 'personal', userId: 'oz' }, { scope: 'room', channelId: 'ops' }] as const;
  const made: Array<{ words: string[]; owner: number; category: 'fact' | 'event' }> = [];
  for (let index = 0; index < count; index++) {
    const earlier = made[random.below(made.length || 1)];
    let words: string[];
    if (earlier && random.next() < 0.35) {
      words = earlier.words.filter(() => random.next() < 0.85);
      if (random.next() < 0.6) words.push(word());
    } else {
      words = Array.from({ length: 3 + random.below(14) }, word);
    }
    const owner = earlier && random.next() < 0.8 ? earlier.owner : random.below(owners.length);
    const category = earlier && random.next() < 0.9 ? earlier.category : random.next() < 0.5 ? 'fact' : 'event';
    made.push({ words: words.length > 0 ? words : [word()], owner, category });
  }
  return made.map(({ words, owner, category }) => ({ content: words.join(' '), category, ...owners[owner] }));
}
