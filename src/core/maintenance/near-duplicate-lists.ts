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

/** A 32-bit FNV-1a hash of each word (its UTF-16 code units). */
export function wordHashes(words: readonly string[]): Int32Array {
  const hashes = new Int32Array(words.length);
  words.forEach((word, index) => {
    let hash = 0x811c9dc5;
    for (let at = 0; at < word.length; at++) hash = Math.imul(hash ^ word.charCodeAt(at), 0x01000193);
    hashes[index] = hash;
  });
  return hashes;
}

/** Queued memories listed per transaction. */
const LIST_PAGE_SIZE = 2000;

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
      return {
        ...memory,
        words: words.slice(0, listedCount(words.length, threshold)),
        size: words.length,
        hashes: wordHashes(words),
      };
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
  // Every shared word before a pair's last shared word in the lists is in both lists (it comes before a
  // listed word in both): a pair whose last listed shared word is at positions i (in the other) and j
  // (in this one), after c shared listed words, shares at most c + min(|X| - 1 - i, |Y| - 1 - j) words.
  const met = new Map<number, { count: number; position: number; probed: number; size: number }>();
  for (const row of rows) {
    if (row.memoryId === id) continue;
    const probedAt = positionOf.get(row.word) ?? 0;
    const pair = met.get(row.memoryId);
    if (pair === undefined)
      met.set(row.memoryId, { count: 1, position: row.position, probed: probedAt, size: row.size });
    else {
      pair.count++;
      if (row.position > pair.position) pair.position = row.position;
      if (probedAt > pair.probed) pair.probed = probedAt;
    }
  }
  const bounded: number[] = [];
  for (const [memoryId, pair] of met) {
    const needed = minimumShared((threshold * (size + pair.size)) / (1 + threshold), 1);
    if (pair.count + Math.min(pair.size - 1 - pair.position, size - 1 - pair.probed) >= needed) bounded.push(memoryId);
  }
  // Then by the hashes of all their words: a shared word is a shared hash, so the hashes shared are at
  // least the words shared (at most a collision more), and a pair below the threshold by them is below it.
  const own = new Set(wordHashes([...words]));
  const hashesOf = await context.storage.maintenance.listedWordHashes(bounded);
  const candidates: number[] = [];
  for (const memoryId of bounded) {
    const hashes = hashesOf.get(memoryId);
    if (hashes === undefined) {
      candidates.push(memoryId);
      continue;
    }
    let shared = 0;
    for (const hash of hashes) if (own.has(hash)) shared++;
    if (shared / (size + hashes.length - shared) >= threshold - 1e-9) candidates.push(memoryId);
  }
  return candidates;
}
