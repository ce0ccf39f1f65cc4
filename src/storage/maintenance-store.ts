import { ErrorCode, MnemeError } from '../core/errors.js';
import type { Memory } from '../core/types.js';
import type { NewMemory, WriteContext } from './memory-store.js';

/** An active, unpinned memory as decay reads it. */
export interface DecayCandidate
  extends Pick<Memory, 'id' | 'strength' | 'salience' | 'importance' | 'pinned' | 'lastAccessedAt' | 'createdAt'> {
  /** Epoch milliseconds up to which importance-steps downgrades were applied, or null. */
  decayedAt: number | null;
}

/**
 * When an active, unpinned memory next needs decay (ADR 9, session 8): a decay policy's rule, which
 * storage evaluates from a memory's stored columns alone, so a write cannot forget to move it.
 * - `fades`: `signal` (strength or salience) times `perDay` per day from the later of the last
 *   retrieval (else the creation) and the creation plus `graceMs` falls below `below`: due at that
 *   crossing, or always when the stored signal is at or below it already.
 * - `every`: something happens `periodMs` after the later of the last retrieval (else the creation)
 *   and the time the stored changes are applied up to (`decayedAt`).
 */
export type DecayDueRule =
  | { kind: 'fades'; signal: 'strength' | 'salience'; perDay: number; below: number; graceMs: number }
  | { kind: 'every'; periodMs: number };

/** Where a read of due memories stands: the due time and id of the last memory read. */
export interface DecayCursor {
  due: number;
  id: number;
}

/** A due memory as decay reads it, with its due time (epoch milliseconds) under the rule it was read by. */
export interface DueDecayCandidate extends DecayCandidate {
  due: number;
}

/** One importance-steps downgrade: the new importance and the time up to which it is applied. */
export interface ImportanceChange {
  id: number;
  importance: number;
  decayedAt: number;
  /**
   * The memory as decay read it, whose step this change is: the change is stored only while the memory is still
   * so (active, unpinned, the same signals, last retrieval and `decayedAt`), never over a write that landed after the
   * read (a retrieval, an edit, a pin; attack 31c).
   */
  read: DecayCandidate;
}

/** What one merge wrote. */
export interface MergeResult {
  merged: Memory;
  archived: Memory[];
}

/**
 * The queries and writes of background maintenance (decay, consolidation, linking, dream): reads
 * in pages by id so that no task loads every memory, or every vector, at once.
 */
export interface MaintenanceStore {
  /** Active, unpinned memories with an id greater than `afterId`, by id, at most `limit`. */
  decayCandidates(afterId: number, limit: number): Promise<DecayCandidate[]>;
  /**
   * Active, unpinned memories due under `rule` at or before `until`, after `after` (null: from the
   * first) by due time then id, at most `limit`. SQLite reads them through an index on the rule's due
   * time once `indexDecayDue` built it, over every active memory before; PostgreSQL evaluates the rule
   * over every active memory in the database (no index).
   */
  /**
   * Builds the index `dueForDecay` reads `rule`'s due memories through, replacing another rule's, when the
   * store keeps one (SQLite; a write: decay's run asks for it, not a read such as `stats`).
   */
  indexDecayDue?(rule: DecayDueRule): Promise<void>;
  dueForDecay(
    rule: DecayDueRule,
    until: number,
    after: DecayCursor | null,
    limit: number,
  ): Promise<DueDecayCandidate[]>;
  /**
   * Stores importance-steps downgrades in one transaction: the new importance, the time decay is
   * applied up to, and an `update` version (with `context.reason`) for each memory whose importance changed. Each
   * only while the memory is still as read (attack 31c). Returns the ids of the changes it stored.
   */
  applyImportanceChanges(changes: readonly ImportanceChange[], context: WriteContext): Promise<number[]>;
  /**
   * Puts to rest (archives and fades, as `MemoryStore.archive` with `fade`) the memories decay read as below its line,
   * in one transaction, each only while it is still as read (active, unpinned, the same signals, last retrieval and
   * `decayedAt`): one retrieved, edited, pinned or archived since is left as it is, for the next run to judge
   * (attack 31c). Returns the ids of those it put to rest.
   */
  putToRest(read: readonly DecayCandidate[], context: WriteContext): Promise<number[]>;
  /** Active memories with an id greater than `afterId`, oldest first, at most `limit`. */
  listAfter(afterId: number, limit: number): Promise<Memory[]>;
  /** The same memories as `listAfter`, their id, owner key and text only (consolidation's read of every memory's words). */
  textsAfter(afterId: number, limit: number): Promise<MemoryText[]>;
  /**
   * The same, of the memories consolidation may merge only: not pinned, not superseded, neither an episode nor an
   * exchange (its pass over the new memories, which reads a whole row only for one it searches candidates for).
   */
  mergeableTextsAfter(afterId: number, limit: number): Promise<MemoryText[]>;
  /** The `limit` most recently created active memories that have a vector of `model`, newest first. */
  recentWithVectors(model: string, limit: number): Promise<Memory[]>;
  /**
   * The stored vectors of `model` of these memories; memories without one are left out. With `into`, a store may
   * return views of that array, the vectors written into it (a page of ids that fits), valid until it is written
   * again: a caller that reads page after page and keeps no vector past its page reuses one array (linking's first
   * pass, 2026-12-03, session 18), where a new one a page was garbage the collector let pile up.
   */
  vectors(ids: readonly number[], model: string, into?: Float32Array): Promise<Map<number, Float32Array>>;
  /** The highest memory id, or 0 for an empty store. */
  latestMemoryId(): Promise<number>;
  /**
   * One bounded step of merging the full-text index into one part, when it is in more than a few
   * (or a merge is under way); true when the step did work: call again until false. Consolidation
   * does so before its searches: the index answers the same searches with the same scores, each term
   * looked up in one part instead of each. An index without parts (PostgreSQL's GIN) answers false.
   */
  compactTextIndex(): Promise<boolean>;
  /**
   * One bounded step of building the vector index's inverted lists of a large store (training, then
   * assigning the existing vectors; ADR 20); true when the step did work: call again until false.
   * Linking does so before its neighbour searches. A store without such lists (PostgreSQL) answers false.
   */
  indexStep(): Promise<boolean>;
  /**
   * Consolidates, in one transaction: writes `merged` (text, FTS, vector and a `merge` version)
   * first, then archives each original (vector removed, `archive` version "merged into #id"), then
   * links the merged memory to each original (`consolidated`). Memories an original superseded are
   * superseded by the merged memory instead (with a `supersedes` link from it). If any step fails,
   * nothing is written: the originals stay visible. CONFLICT when an original is already archived, or is
   * no longer of `merged`'s owner (an audience change moved it while its merge was written, ADR 5), or, with `read`
   * (the originals as the caller read them), when one's text, category or importance changed since (an edit landed
   * while the merged text was written: attack 31c).
   */
  merge(
    merged: NewMemory,
    originalIds: readonly number[],
    context: WriteContext,
    read?: readonly MergeOriginal[],
  ): Promise<MergeResult>;
  /**
   * Consolidation's stored word ids, when the store keeps them (SQLite): its near-duplicate index then
   * reads them instead of every memory's text. Absent (PostgreSQL): it reads every text.
   */
  readonly wordBlocks?: WordBlockStore;
}

/**
 * The words of the active memories of a range of ids [firstId, lastId], as ids in a stored vocabulary
 * (ADR 19, 2026-12-02). Column by column: memory `i` has id `ids[i]`, owner key `owners[ownerOf[i]]` and
 * words `words[starts[i]]` up to `words[starts[i + 1]]`.
 */
export interface WordBlock {
  firstId: number;
  lastId: number;
  ids: Int32Array;
  owners: readonly string[];
  ownerOf: Int32Array;
  starts: Int32Array;
  words: Int32Array;
}

/** A memory's words as a block is written from them (its text's distinct words, each once). */
export interface MemoryWords {
  id: number;
  owner: string;
  words: readonly string[];
}

/**
 * Stored word blocks and their vocabulary. A block holds the active memories of its range as they
 * were when it was written; the store deletes it when one of them changes text or owner, is restored
 * (from archived), is deleted, or a memory is inserted into its range, and then moves the generation
 * on. Archiving leaves it (an archived memory in it is a needless search at worst). A word's id never
 * changes, nor is it given to another word.
 */
export interface WordBlockStore {
  /** A number that moves on whenever a stored or unstored block's memories change (see above). */
  generation(): Promise<number>;
  /** Every stored block, by first id, and the largest word id the vocabulary held then (0 for none). */
  read(): Promise<{ blocks: WordBlock[]; maxWordId: number }>;
  /**
   * The vocabulary's ids of these words; words it does not hold are left out, and all of them when the
   * generation is no longer `generation` (a purge may have given their ids to other words since).
   */
  wordIds(words: readonly string[], generation: number): Promise<Map<string, number>>;
  /**
   * Writes the block of [firstId, lastId] from these memories (the active ones of the range, by id),
   * adding their new words to the vocabulary, in one transaction, and only if the generation is still
   * `generation` (the memories were read after it was): false, and nothing written, otherwise.
   */
  write(firstId: number, lastId: number, memories: readonly MemoryWords[], generation: number): Promise<boolean>;
}

/** A memory's id, owner key (`ownerKey` of its scope, as stored) and text. */
export interface MemoryText {
  id: number;
  owner: string;
  content: string;
}

/** An original of a merge as its caller read it: what the merged memory was made from. */
export type MergeOriginal = Pick<Memory, 'id' | 'content' | 'category' | 'importance'>;

/**
 * CONFLICT unless an original of a merge still holds what its caller read (`MaintenanceStore.merge` with `read`):
 * a merged memory made from the text before an edit would archive the edit (attack 31c).
 */
export function assertAsRead(
  row: { id: number; content: string; category: string; importance: number },
  read: readonly MergeOriginal[],
): void {
  const before = read.find((original) => original.id === row.id);
  if (
    before &&
    (before.content !== row.content || before.category !== row.category || before.importance !== row.importance)
  ) {
    throw new MnemeError(
      ErrorCode.Conflict,
      `memory ${row.id} was edited while its merge was written; nothing was merged`,
    );
  }
}

/** CONFLICT unless an original of a merge is still of the merged memory's owner (`MaintenanceStore.merge`). */
export function assertOfOwner(owner: string, id: number, mergedOwner: string): void {
  if (owner !== mergedOwner) {
    throw new MnemeError(
      ErrorCode.Conflict,
      `memory ${id} left ${mergedOwner} (an audience narrowed) while its merge was written; nothing was merged`,
    );
  }
}
