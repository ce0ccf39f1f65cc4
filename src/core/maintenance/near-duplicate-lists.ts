import type { EngineContext } from '../engine-context.js';
import { wordSet } from '../similarity.js';
import { minimumShared } from './near-duplicate-index.js';

/**
 * The near-duplicate lists kept between consolidation runs (ADR 19, session 6): each memory is stored
 * under the first `listedCount` of its distinct words (`wordSet`) in one fixed order (`listedOrder`),
 * by owner key. Two sets X and Y with Jaccard >= t share o >= t·max(|X|, |Y|) words; their first shared
 * word in that order lies within the first |X| - ⌈t·|X|⌉ + 1 words of X and the first |Y| - ⌈t·|Y|⌉ + 1
 * of Y (fewer than o words come after it in each): a memory finds every near-duplicate of any size by
 * looking up its own first words (prefix filtering, as `createNearDuplicateIndex` does in memory).
 * The order must never depend on the data (a memory listed once is not listed again when other words
 * grow common): longest word first, which tends to put rare words first, then by code units.
 */
export function listedOrder(words: Iterable<string>): string[] {
  return [...words].sort((left, right) => right.length - left.length || (left < right ? -1 : left > right ? 1 : 0));
}

/** How many of a memory's `size` words it is listed under (and looks up). */
export function listedCount(size: number, threshold: number): number {
  return size === 0 ? 0 : size - minimumShared(size, threshold) + 1;
}

/** Queued memories listed per transaction. */
const LIST_PAGE_SIZE = 500;

/**
 * Lists every memory queued (written, or its text or owner changed, since it was last listed; migration
 * 20 queued those before it), a page a transaction, until the queue is (nearly) empty: those queued
 * while it runs are listed in a later run. Returns how many memories it listed.
 */
export async function listQueuedMemories(context: EngineContext, threshold: number): Promise<number> {
  const { maintenance } = context.storage;
  let listed = 0;
  for (;;) {
    const { entries, memories } = await maintenance.nearDuplicateQueue(LIST_PAGE_SIZE);
    if (entries.length === 0) break;
    const listings = memories.map((memory) => {
      const words = listedOrder(wordSet(memory.content));
      return { ...memory, words: words.slice(0, listedCount(words.length, threshold)), size: words.length };
    });
    await maintenance.listNearDuplicates(listings, entries);
    listed += listings.length;
    if (entries.length < LIST_PAGE_SIZE) break;
  }
  return listed;
}

/**
 * The memories of `owner` that may be near-duplicates of memory `id` with these words (Jaccard >=
 * `threshold`), by the lists: a superset of them among the listed memories (their sizes, and the
 * positions where a pair first shares a word, leave out most of the others), `id` itself left out.
 */
export async function listedCandidates(
  context: EngineContext,
  id: number,
  owner: string,
  words: ReadonlySet<string>,
  threshold: number,
): Promise<number[]> {
  const size = words.size;
  if (size === 0) return [];
  const probed = listedOrder(words).slice(0, listedCount(size, threshold));
  const positionOf = new Map(probed.map((word, position) => [word, position]));
  // A partner has at least t·|Y| words and at most |Y| / t (it shares at least t·max of both).
  const rows = await context.storage.maintenance.listedNearDuplicates(
    owner,
    probed,
    minimumShared(size, threshold),
    Math.floor(size / threshold + 1e-9),
  );
  // A pair is first met at its first shared word (the smallest position in the probe's order): after
  // it, each has at most its words from there on to share.
  rows.sort((left, right) => (positionOf.get(left.word) ?? 0) - (positionOf.get(right.word) ?? 0));
  const met = new Set<number>([id]);
  const candidates: number[] = [];
  for (const row of rows) {
    if (met.has(row.memoryId)) continue;
    met.add(row.memoryId);
    const position = positionOf.get(row.word) ?? 0;
    const needed = minimumShared((threshold * (size + row.size)) / (1 + threshold), 1);
    if (Math.min(size - position, row.size - row.position) >= needed) candidates.push(row.memoryId);
  }
  return candidates;
}
