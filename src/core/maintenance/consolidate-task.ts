import type { NewMemory } from '../../storage/memory-store.js';
import { embedDocuments } from '../embed-documents.js';
import type { EngineContext } from '../engine-context.js';
import { ErrorCode, errorMessage, isMnemeError } from '../errors.js';
import { sameSubject } from '../fact-subject.js';
import { type MemoryMerger, MergedMemorySchema } from '../ports/memory-merger.js';
import { MAX_QUERY_TERMS } from '../recall/query-terms.js';
import { ownerKey } from '../scope.js';
import { isOpposite, jaccard, wordSet } from '../similarity.js';
import type { Memory } from '../types.js';
import { ALL_CHANNELS, MAINTENANCE_ACTOR, type TaskReport } from './maintenance-task.js';
import { createNearDuplicateIndex, type NearDuplicateIndex } from './near-duplicate-index.js';

/** Memories whose word sets overlap at least this much (Jaccard) are merged. */
export const CONSOLIDATION_JACCARD = 0.35;
/** Memories whose vectors are at least this close (cosine) are merged. */
export const CONSOLIDATION_COSINE = 0.92;
/** The cosine pass looks at this many of the most recent memories. */
export const CONSOLIDATION_RECENT = 200;
/** Most memories merged into one. */
const MAX_CLUSTER = 8;
/** Full-text candidates looked at per new memory. */
const TEXT_CANDIDATES = 20;
/**
 * Words of a memory its full-text candidates are searched by: its rarest in the store (short posting
 * lists, and the words a near-duplicate shares that tell it from the rest), whatever its length. A
 * memory of up to 8 words is searched by all.
 */
export const CANDIDATE_TERMS = 8;
/** New memories read per page. */
const PAGE_SIZE = 200;
/** Memories read per page while the near-duplicate index is built. */
const INDEX_PAGE_SIZE = 1000;
/**
 * A run whose new memories are at least this share of the store, or {@link NEAR_DUPLICATE_INDEX_NEW} of
 * them, first reads every active memory's words into a near-duplicate index (`createNearDuplicateIndex`)
 * and searches full-text candidates only for the new memories that have a near-duplicate; a run over
 * fewer searches for each new memory.
 */
export const NEAR_DUPLICATE_INDEX_SHARE = 0.05;
/**
 * The index compares only pairs with a new memory, and costs about as much as 300-400 searches at
 * 100,000 memories (measured) and, estimated, at 10,000 (it reads every text; a search's lists grow
 * with the store): from this many new memories it is used whatever the store's size (ADR 19, session 5).
 */
export const NEAR_DUPLICATE_INDEX_NEW = 400;

/**
 * Memory ids per stored word block (`MaintenanceStore.wordBlocks`): block b holds ids b·1000 + 1 to
 * (b + 1)·1000. A store of 100,000 memories is 100 blocks of about 60 KB.
 */
export const WORD_BLOCK_SIZE = 1000;

/** The largest memory id a stored word block may hold: blocks keep ids as 32-bit integers (larger: read from texts). */
const MAX_WORD_BLOCK_ID = 2 ** 31 - 1;

/** How a consolidation run picks the new memories it searches candidates for (tests force one way). */
export interface ConsolidateOptions {
  /** 'auto' (default): by {@link NEAR_DUPLICATE_INDEX_SHARE} and {@link NEAR_DUPLICATE_INDEX_NEW}; 'always' or 'never' the near-duplicate index. */
  nearDuplicateIndex?: 'auto' | 'always' | 'never';
  /** Whether the index reads the store's word blocks when it has them (default true; false: every text). */
  wordBlocks?: boolean;
  /** Memory ids per word block (default {@link WORD_BLOCK_SIZE}; tests use small ones). */
  wordBlockSize?: number;
}

/** What one consolidation run did. */
export interface ConsolidateReport extends TaskReport {
  /** New memories compared with their full-text candidates (the Jaccard pass). */
  checked: number;
  /** Merged memories written. */
  clusters: number;
  /** Originals merged into them (and archived). */
  merged: number;
}

/**
 * Merges near-duplicates into one memory, never across owners (scope), users, sectors or subjects
 * (`sameSubject`), never pinned or superseded memories, episodes or exchanges: (1) each memory newer
 * than the consolidation watermark with its full-text candidates of the same owner at Jaccard >=
 * 0.35 (at most 20, searched by its 8 rarest words: one bounded search per memory); (2) when vectors exist, the 200 most recent
 * memories by cosine >= 0.92. Each cluster of 2 or more is written as one memory first; the
 * originals are archived in the same transaction, after it, with `consolidated` links to them.
 */
export async function runConsolidate(
  context: EngineContext,
  merger: MemoryMerger,
  now: number,
  options: ConsolidateOptions = {},
): Promise<ConsolidateReport> {
  const { storage } = context;
  const report: ConsolidateReport = { checked: 0, clusters: 0, merged: 0, skipped: null };
  const state = await storage.maintenanceState.get(ALL_CHANNELS, 'consolidate');
  const latest = await storage.maintenance.latestMemoryId();
  const done = new Set<number>();
  /** Display names of the users whose memories are compared, by user id. */
  const speakers = new Map<string, string>();

  let afterId = state?.watermark ?? 0;
  /** The watermark a refused merge holds the run's to: its seed is read again by the next run (attack 31e). */
  let retryAfter = Number.POSITIVE_INFINITY;
  // One full-text search per new memory follows: first the index in one part (each term looked up
  // once), a bounded step at a time.
  if (afterId < latest) while (await storage.maintenance.compactTextIndex());
  const mode = options.nearDuplicateIndex ?? 'auto';
  const index =
    afterId < latest &&
    (mode === 'always' ||
      (mode === 'auto' && latest - afterId >= Math.min(NEAR_DUPLICATE_INDEX_NEW, NEAR_DUPLICATE_INDEX_SHARE * latest)))
      ? await nearDuplicateIndex(context, afterId, latest, options)
      : null;
  while (afterId < latest) {
    // The new memories' texts; a whole row only for one whose candidates are searched (with the near-duplicate
    // index, a few of them: a row of every memory was most of what the first run over a large store allocated).
    const page = await storage.maintenance.mergeableTextsAfter(afterId, PAGE_SIZE);
    if (page.length === 0) break;
    afterId = page.at(-1)?.id ?? latest;
    for (const text of page) {
      if (text.id > latest) continue;
      report.checked++;
      if (done.has(text.id)) continue;
      let words = wordSet(text.content);
      if (words.size === 0) continue;
      // No memory of its owner is close enough to merge with: no candidate the search finds could be.
      if (index && !index.hasNearDuplicate(text.id, text.owner, words)) continue;
      const [seed] = await storage.memories.get([text.id]);
      // Changed since its text was read (another process): as it is now.
      if (!seed || !isMergeable(seed)) continue;
      if (seed.content !== text.content) words = wordSet(seed.content);
      const hits = await storage.memories.searchText({
        terms: [...words].slice(0, MAX_QUERY_TERMS),
        maxTerms: CANDIDATE_TERMS,
        owners: [ownerOf(seed)],
        limit: TEXT_CANDIDATES,
      });
      const candidates = await storage.memories.get(
        hits.map((hit) => hit.id).filter((id) => id !== seed.id && !done.has(id)),
      );
      await learnSpeakers(context, [seed], speakers);
      const cluster = [seed];
      for (const candidate of candidates) {
        if (cluster.length >= MAX_CLUSTER) break;
        if (!isMergeable(candidate) || !isTogether(seed, candidate, speakers) || saysOpposite(cluster, candidate))
          continue;
        if (jaccard(words, wordSet(candidate.content)) >= CONSOLIDATION_JACCARD) cluster.push(candidate);
      }
      if (cluster.length >= 2 && !(await mergeCluster(context, merger, cluster, 'jaccard', now, done, report))) {
        retryAfter = Math.min(retryAfter, text.id - 1);
      }
    }
  }

  if (context.embedder) {
    const recent = (await storage.maintenance.recentWithVectors(context.embedder.modelId, CONSOLIDATION_RECENT)).filter(
      (memory) => isMergeable(memory) && !done.has(memory.id),
    );
    const vectors = await storage.maintenance.vectors(
      recent.map((memory) => memory.id),
      context.embedder.modelId,
    );
    const oldestFirst = recent.sort((left, right) => left.id - right.id);
    await learnSpeakers(context, oldestFirst, speakers);
    for (const seed of oldestFirst) {
      const seedVector = vectors.get(seed.id);
      if (!seedVector || done.has(seed.id)) continue;
      const cluster = [seed];
      for (const other of oldestFirst) {
        if (cluster.length >= MAX_CLUSTER) break;
        const otherVector = vectors.get(other.id);
        if (other.id === seed.id || !otherVector || done.has(other.id) || !isTogether(seed, other, speakers)) continue;
        if (saysOpposite(cluster, other)) continue;
        if (cosine(seedVector, otherVector) >= CONSOLIDATION_COSINE) cluster.push(other);
      }
      if (cluster.length >= 2) await mergeCluster(context, merger, cluster, 'cosine', now, done, report);
    }
  }

  await storage.maintenanceState.set(ALL_CHANNELS, 'consolidate', {
    watermark: Math.max(Math.min(latest, retryAfter), state?.watermark ?? 0),
    lastRunAt: now,
  });
  return report;
}

/**
 * Every active memory up to `latest` in a near-duplicate index (their words, by owner), a page at a time,
 * answering for the new ones (above `watermark`): a pair of two older memories is not compared.
 * A memory archived since is still in it (a needless search at worst). A memory merged during the run is
 * no candidate in that run (it is done); one written by another call during the run is compared as a
 * new memory in the next run.
 *
 * When the store keeps word blocks, a block of ids all at or below the watermark is read from them (word
 * ids, no text); every other block from its texts, split here, and a whole one (up to `latest`) that
 * is not stored is written for the next runs (ADR 19, session 7). The index's vocabulary is the stored
 * one up to its largest id when the blocks were read; a word it did not hold then takes an id above
 * that (no block read holds such a word), so stored and split words compare alike.
 */
async function nearDuplicateIndex(
  context: EngineContext,
  watermark: number,
  latest: number,
  options: ConsolidateOptions,
): Promise<NearDuplicateIndex> {
  const store = options.wordBlocks === false ? undefined : context.storage.maintenance.wordBlocks;
  if (!store) {
    const index = createNearDuplicateIndex(CONSOLIDATION_JACCARD);
    let afterId = 0;
    while (afterId < latest) {
      const page = await context.storage.maintenance.textsAfter(afterId, INDEX_PAGE_SIZE);
      if (page.length === 0) break;
      for (const memory of page) if (memory.id <= latest) index.add(memory.id, memory.owner, wordSet(memory.content));
      afterId = page.at(-1)?.id ?? latest;
    }
    index.seal(watermark);
    return index;
  }
  const size = options.wordBlockSize ?? WORD_BLOCK_SIZE;
  // Read first: a block that changes after it is not written by this run.
  const generation = await store.generation();
  const { blocks, maxWordId } = await store.read();
  const stored = new Map(
    blocks.filter((block) => block.lastId - block.firstId + 1 === size).map((block) => [block.firstId, block]),
  );
  const words = new Map<string, number>();
  const index = createNearDuplicateIndex(CONSOLIDATION_JACCARD, { words, nextWordId: maxWordId + 1 });
  let writing = true;
  for (let firstId = 1; firstId <= latest; firstId += size) {
    let lastId = firstId + size - 1;
    const block = stored.get(firstId);
    if (block && lastId <= watermark) {
      for (let at = 0; at < block.ids.length; at++) {
        index.addIds(
          block.ids[at] ?? 0,
          block.owners[block.ownerOf[at] ?? 0] ?? '',
          block.words.subarray(block.starts[at], block.starts[at + 1]),
        );
      }
      continue;
    }
    const page = await context.storage.maintenance.textsAfter(firstId - 1, size);
    const next = page[0]?.id;
    if (next === undefined || next > latest) break;
    if (next > lastId && !stored.has(firstId)) {
      // No active memory in this block (a gap in the ids): on to the block of the next one.
      firstId = next - ((next - 1) % size);
      lastId = firstId + size - 1;
      const ahead = stored.get(firstId);
      if (ahead && lastId <= watermark) {
        firstId -= size;
        continue;
      }
    }
    const texts = page.filter((memory) => memory.id >= firstId && memory.id <= Math.min(lastId, latest));
    const split = texts.map((memory) => ({ id: memory.id, owner: memory.owner, words: [...wordSet(memory.content)] }));
    const unknown = new Set<string>();
    for (const memory of split) for (const word of memory.words) if (!words.has(word)) unknown.add(word);
    if (unknown.size > 0 && maxWordId > 0) {
      for (const [word, id] of await store.wordIds([...unknown], generation)) {
        if (id <= maxWordId) words.set(word, id);
      }
    }
    for (const memory of split) index.add(memory.id, memory.owner, memory.words);
    // A block changed since the generation was read is not written, nor any after it in this run.
    if (writing && !stored.has(firstId) && lastId <= latest && lastId <= MAX_WORD_BLOCK_ID) {
      writing = await store.write(firstId, lastId, split, generation);
    }
  }
  index.seal(watermark);
  return index;
}

/**
 * Pinned memories are the user's own, episodes each summarise a different hour, exchanges each
 * record a different turn of a conversation, and a superseded memory is what held before a change
 * (merged, it would pass for current): none is merged.
 */
function isMergeable(memory: Memory): boolean {
  return (
    memory.archivedAt === null &&
    !memory.pinned &&
    memory.supersededBy === null &&
    memory.category !== 'episode' &&
    memory.category !== 'exchange'
  );
}

/**
 * Visible together (the same owner, hence the same scope), of the same sector, about the same user
 * (so that purging a user still deletes every merged memory made from theirs), and saying something
 * of the same subject (`sameSubject`, read with the display name of that user, who said both:
 * "Sam's team ..." and "Lee's team ..." are never merged), neither saying the opposite of the other ("Oz likes
 * coffee", "Oz does not like coffee": `isOpposite`).
 */
/** Whether `candidate` says the opposite of a memory of the cluster (the seed is checked by `isTogether`, the others here). */
function saysOpposite(cluster: readonly Memory[], candidate: Memory): boolean {
  return cluster.some((member, at) => at > 0 && isOpposite(member.content, candidate.content));
}

function isTogether(left: Memory, right: Memory, speakers: ReadonlyMap<string, string>): boolean {
  return (
    ownerOf(left) === ownerOf(right) &&
    left.sector === right.sector &&
    left.userId === right.userId &&
    !isOpposite(left.content, right.content) &&
    sameSubject(left.content, right.content, left.userId === null ? undefined : speakers.get(left.userId))
  );
}

/** Adds the display names of the users of `memories` that `speakers` does not hold yet (one read each). */
async function learnSpeakers(
  context: EngineContext,
  memories: readonly Memory[],
  speakers: Map<string, string>,
): Promise<void> {
  for (const { userId } of memories) {
    if (userId === null || speakers.has(userId)) continue;
    speakers.set(userId, (await context.storage.directory.getUser(userId))?.displayName ?? userId);
  }
}

function ownerOf(memory: Memory): string {
  return ownerKey(memory.scope, memory);
}

/**
 * Merges one cluster; false when the store refused the merge because an original changed since it was read
 * (forgotten, merged, edited, moved or purged), so that the caller has it read again (a merger's failure is not
 * retried: true).
 */
async function mergeCluster(
  context: EngineContext,
  merger: MemoryMerger,
  cluster: readonly Memory[],
  measure: 'jaccard' | 'cosine',
  now: number,
  done: Set<number>,
  report: ConsolidateReport,
): Promise<boolean> {
  const originals = [...cluster].sort((left, right) => left.id - right.id);
  for (const memory of originals) done.add(memory.id);
  let content: string;
  try {
    const result = MergedMemorySchema.safeParse(
      await merger.merge({
        memories: originals.map(({ id, content, category, importance, createdAt }) => ({
          id,
          content,
          category,
          importance,
          createdAt,
        })),
      }),
    );
    if (!result.success) {
      context.logger.warn(`the ${merger.id} merger returned no usable memory for #${originals[0]?.id}; skipped`);
      return true;
    }
    content = result.data.content;
  } catch (error) {
    context.logger.warn(`the ${merger.id} merger failed, skipped: ${errorMessage(error)}`);
    return true;
  }
  const merged = await mergedMemory(context, originals, content);
  const ids = originals.map((memory) => memory.id);
  try {
    // Made from the originals as read: one edited while the merger wrote is refused (attack 31c).
    const result = await context.storage.maintenance.merge(
      merged,
      ids,
      {
        at: now,
        actor: MAINTENANCE_ACTOR,
        reason: `merged from ${ids.map((id) => `#${id}`).join(', ')} (${measure})`,
      },
      originals,
    );
    done.add(result.merged.id);
    report.clusters++;
    report.merged += result.archived.length;
    return true;
  } catch (error) {
    // An original was forgotten, merged or edited meanwhile: nothing was written; the cluster is read again, as it
    // then is, by the next run (the caller holds the watermark before its seed: attack 31e).
    if (!isMnemeError(error, ErrorCode.Conflict) && !isMnemeError(error, ErrorCode.NotFound)) throw error;
    return false;
  }
}

/**
 * The merged memory: the first original's scope and owner, the commonest category, the highest
 * importance, every source, valid from the latest original's `validFrom`.
 */
async function mergedMemory(context: EngineContext, originals: readonly Memory[], content: string): Promise<NewMemory> {
  const [first] = originals;
  if (!first) throw new Error('a cluster needs at least one memory');
  const counts = new Map<string, number>();
  for (const memory of originals) counts.set(memory.category, (counts.get(memory.category) ?? 0) + 1);
  const category = [...counts].reduce((best, entry) => (entry[1] > best[1] ? entry : best))[0];
  const union = (values: Iterable<number>) => [...new Set(values)].sort((left, right) => left - right);
  const [embedding = null] = await embedDocuments(context, [content]);
  return {
    content,
    category,
    sector: first.sector,
    scope: first.scope,
    owner: ownerOf(first),
    userId: first.userId,
    channelId: first.channelId,
    projectId: first.projectId,
    topicId: first.topicId,
    source: 'consolidation',
    importance: Math.max(...originals.map((memory) => memory.importance)),
    pinned: false,
    sourceMessageIds: union(originals.flatMap((memory) => memory.sourceMessageIds)),
    sourceIds: union(originals.flatMap((memory) => [memory.id, ...memory.sourceIds])),
    embedding,
    validFrom: Math.max(...originals.map((memory) => Date.parse(memory.validFrom))),
  };
}

/** Cosine similarity of two vectors of the same length; 0 when either is all zeros. */
export function cosine(left: Float32Array, right: Float32Array): number {
  let dot = 0;
  let leftNorm = 0;
  let rightNorm = 0;
  for (let index = 0; index < left.length; index++) {
    const a = left[index] ?? 0;
    const b = right[index] ?? 0;
    dot += a * b;
    leftNorm += a * a;
    rightNorm += b * b;
  }
  return leftNorm === 0 || rightNorm === 0 ? 0 : dot / Math.sqrt(leftNorm * rightNorm);
}
