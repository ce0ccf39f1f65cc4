import { ASSOCIATIONS_TASK, type TermAssociation } from '../../storage/maintenance-store.js';
import type { EngineContext } from '../engine-context.js';
import { indexStem } from '../recall/calibrated-relevance.js';
import { queryTerms } from '../recall/query-terms.js';
import {
  ASSOCIATION,
  associableWords,
  candidatesOf,
  MIN_SHARED_MEMORIES,
  wordAssociations,
} from '../recall/term-associations.js';
import { ALL_CHANNELS } from './maintenance-task.js';

/** Memories whose words are read per step (one watermark each). */
const PAGE_SIZE = 500;
/** Words whose associations are computed per storage round (their searches, one `get`, one write). */
const WORDS_PER_WRITE = 100;
/**
 * A word's stored associations are computed again when a new memory holds it and its owner key's count of
 * it has moved by this factor since (up or down): each word is computed O(log n) times as it spreads.
 */
export const ASSOCIATION_RECOUNT = 1.25;

/**
 * A run with at least this many new memories, and this share of the store, reads every memory's text once
 * (`bulkAssociations`) instead of searching each new word's memories.
 */
export const BULK_MIN_MEMORIES = 1_000;
export const BULK_MIN_SHARE = 0.1;
/** BM25's parameters (FTS5's), for ranking a word's memories in a bulk run. */
const BM25_K1 = 1.2;
const BM25_B = 0.75;

/** What one run of the associations step did. */
export interface AssociationsReport {
  /** New memories whose words were read. */
  checked: number;
  /** Words (per owner key) whose associations were computed and stored. */
  words: number;
}

/**
 * Recall's stored word associations (ADR 26, session 8), a step of consolidation: for each memory newer
 * than the `associations` watermark, page by page (one watermark each: exactly once, interruptible), each
 * of its words that its owner key's memories hold at least twice and at most `ASSOCIATION.maxMemories`
 * times gets its associations among that owner key's memories only (`wordAssociations` of its best
 * full-text matches there), stored by owner key and stem. A word already stored is computed again only
 * when its count has moved by `ASSOCIATION_RECOUNT` since, and at most once a run. Without a store that
 * keeps them (PostgreSQL), or while `recall.associationWeight` is 0 (the list off: nothing reads them), it
 * does nothing and its watermark stays; without such a store recall computes them itself. A large backlog (`BULK_MIN_MEMORIES`
 * and `BULK_MIN_SHARE` of the store, or `options.bulk`) goes through `bulkAssociations` instead.
 */
export async function runAssociations(
  context: EngineContext,
  now: number,
  options: { bulk?: boolean } = {},
): Promise<AssociationsReport> {
  const report: AssociationsReport = { checked: 0, words: 0 };
  const { storage } = context;
  const store = storage.maintenance.termAssociations;
  // Nothing reads them while the list is off: a database that turns it on gets them from its next run.
  if (!store || context.policy.recall.associationWeight <= 0) return report;
  const state = await storage.maintenanceState.get(ALL_CHANNELS, ASSOCIATIONS_TASK);
  const latest = await storage.maintenance.latestMemoryId();
  const includeFaded = context.policy.recall.fadedWeight > 0;
  /** Owner key and stem of the words computed in this run: the memories up to `latest` were all there. */
  const done = new Set<string>();
  let afterId = state?.watermark ?? 0;
  const bulk = options.bulk ?? latest - afterId >= Math.max(BULK_MIN_MEMORIES, BULK_MIN_SHARE * latest);
  if (bulk && afterId < latest) {
    return bulkAssociations(context, afterId, latest, now);
  }
  while (afterId < latest) {
    const page = await storage.maintenance.textsAfter(afterId, PAGE_SIZE);
    if (page.length === 0) break;
    const words = new Map<string, Map<string, string>>();
    for (const memory of page) {
      if (memory.id > latest) continue;
      report.checked++;
      const owned = words.get(memory.owner) ?? new Map<string, string>();
      words.set(memory.owner, owned);
      for (const word of queryTerms(memory.content)) {
        const stem = indexStem(word);
        if (!owned.has(stem) && !done.has(`${memory.owner}\u0000${stem}`)) owned.set(stem, word);
      }
    }
    for (const [owner, owned] of words) {
      const stems = [...owned.keys()];
      const surface = [...owned.values()];
      for (const stem of stems) done.add(`${owner}\u0000${stem}`);
      const [counts, stored] = await Promise.all([
        storage.memories.termCounts(surface, { owners: [owner] }),
        store.storedCounts(owner, stems),
      ]);
      const due = stems.flatMap((stem, index) => {
        const count = counts.counts[index] ?? 0;
        const before = stored[index] ?? 0;
        const moved = before === 0 || count >= before * ASSOCIATION_RECOUNT || count * ASSOCIATION_RECOUNT <= before;
        return count >= MIN_SHARED_MEMORIES && count <= ASSOCIATION.maxMemories && moved
          ? [{ stem, word: surface[index] ?? stem, count }]
          : [];
      });
      for (let start = 0; start < due.length; start += WORDS_PER_WRITE) {
        const chunk = due.slice(start, start + WORDS_PER_WRITE);
        const found = await Promise.all(
          chunk.map(({ word }) =>
            storage.memories.searchText({
              terms: [word],
              owners: [owner],
              limit: ASSOCIATION.memoriesPerWord,
              includeFaded,
            }),
          ),
        );
        const read = await storage.memories.get([...new Set(found.flat().map((hit) => hit.id))]);
        const textOf = new Map(read.map((memory) => [memory.id, memory.content]));
        const rows = chunk.map(
          ({ stem, word, count }, index): TermAssociation => ({
            owner,
            stem,
            memories: count,
            words: wordAssociations(
              word,
              (found[index] ?? []).flatMap((hit) => textOf.get(hit.id) ?? []),
            ),
          }),
        );
        await store.write(rows);
        report.words += rows.length;
      }
    }
    afterId = page.at(-1)?.id ?? latest;
    await storage.maintenanceState.set(ALL_CHANNELS, ASSOCIATIONS_TASK, {
      watermark: Math.min(afterId, latest),
      lastRunAt: now,
    });
  }
  return report;
}

/**
 * A run over a large backlog (the first one, say): every active memory's text read once, page by page, and
 * for each owner key, each word its memories hold at least twice and at most `ASSOCIATION.maxMemories`
 * times (counted by the index, as `termCounts` does) gets the associations of its
 * `ASSOCIATION.memoriesPerWord` best memories of that owner key by BM25 of the word alone (its occurrences
 * in the text and the text's length, FTS5's k1 and b; ties to the older memory): what a search of the word
 * would rank, from the texts (a memory's search context aside), without one search per word. Each owner
 * key's rows are written as it is done; the watermark moves once, to `latest`, at the end.
 */
async function bulkAssociations(
  context: EngineContext,
  afterId: number,
  latest: number,
  now: number,
): Promise<AssociationsReport> {
  const { storage } = context;
  const store = storage.maintenance.termAssociations;
  const report: AssociationsReport = { checked: 0, words: 0 };
  if (!store) return report;
  interface Text {
    id: number;
    length: number;
    /** Occurrences of each stem (not stopwords). */
    occurrences: Map<string, number>;
    words: Array<readonly [string, string]>;
  }
  const owners = new Map<string, Text[]>();
  /** Owner keys with a new memory: only theirs are computed. */
  const changed = new Set<string>();
  let at = 0;
  while (at < latest) {
    const page = await storage.maintenance.textsAfter(at, PAGE_SIZE * 4);
    if (page.length === 0) break;
    at = page.at(-1)?.id ?? latest;
    for (const memory of page) {
      if (memory.id > latest) continue;
      if (memory.id > afterId) {
        report.checked++;
        changed.add(memory.owner);
      }
      const tokens = memory.content.toLowerCase().match(/[\p{L}\p{N}\p{M}]+/gu) ?? [];
      const occurrences = new Map<string, number>();
      for (const term of queryTerms(memory.content)) occurrences.set(indexStem(term), 0);
      for (const token of tokens) {
        const stem = indexStem(token);
        const count = occurrences.get(stem);
        if (count !== undefined) occurrences.set(stem, count + 1);
      }
      const texts = owners.get(memory.owner) ?? [];
      texts.push({ id: memory.id, length: tokens.length, occurrences, words: associableWords(memory.content) });
      owners.set(memory.owner, texts);
    }
  }
  for (const owner of changed) {
    const texts = owners.get(owner) ?? [];
    const postings = new Map<string, number[]>();
    const surface = new Map<string, string>();
    let length = 0;
    texts.forEach((text, index) => {
      length += text.length;
      for (const stem of text.occurrences.keys()) {
        const list = postings.get(stem);
        if (list) list.push(index);
        else postings.set(stem, [index]);
      }
      for (const [stem, word] of text.words) if (!surface.has(stem)) surface.set(stem, word);
    });
    const average = length / Math.max(1, texts.length);
    const stems = [...postings.keys()].filter((stem) => (postings.get(stem)?.length ?? 0) >= MIN_SHARED_MEMORIES);
    const words = stems.map((stem) => surface.get(stem) ?? stem);
    const counts = await storage.memories.termCounts(words, { owners: [owner] });
    const rows: TermAssociation[] = [];
    stems.forEach((stem, index) => {
      const count = counts.counts[index] ?? 0;
      if (count < MIN_SHARED_MEMORIES || count > ASSOCIATION.maxMemories) return;
      const best = (postings.get(stem) ?? [])
        .map((text) => {
          const found = texts[text] as Text;
          const frequency = found.occurrences.get(stem) ?? 0;
          const norm = BM25_K1 * (1 - BM25_B + (BM25_B * found.length) / (average || 1));
          return { text: found, score: (frequency * (BM25_K1 + 1)) / (frequency + norm) };
        })
        .sort((a, b) => b.score - a.score || a.text.id - b.text.id)
        .slice(0, ASSOCIATION.memoriesPerWord);
      rows.push({
        owner,
        stem,
        memories: count,
        words: candidatesOf([best.map(({ text }) => text.words)], new Set([stem]), ASSOCIATION.candidates),
      });
    });
    for (let start = 0; start < rows.length; start += WORDS_PER_WRITE * 10) {
      await store.write(rows.slice(start, start + WORDS_PER_WRITE * 10));
    }
    report.words += rows.length;
  }
  await storage.maintenanceState.set(ALL_CHANNELS, ASSOCIATIONS_TASK, { watermark: latest, lastRunAt: now });
  return report;
}
