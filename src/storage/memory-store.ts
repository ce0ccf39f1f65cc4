import { ErrorCode, MnemeError } from '../core/errors.js';
import type { ParsedListFilter } from '../core/schemas.js';
import { ownerKey } from '../core/scope.js';
import type {
  Memory,
  MemoryPage,
  MemorySource,
  MemoryStats,
  MemoryVersion,
  PurgeReport,
  Scope,
  Sector,
} from '../core/types.js';
import type { MaintenanceStateChanges } from './maintenance-state-store.js';

/** A vector and the id of the model that produced it; vectors of two models are never compared. */
export interface StoredEmbedding {
  model: string;
  vector: Float32Array;
}

/** A memory as core hands it to storage: validated, owner key computed, times in epoch milliseconds. */
export interface NewMemory {
  content: string;
  category: string;
  sector: Sector;
  scope: Scope;
  /** Owner key from `ownerKey()` in core/scope.ts; every search filters on it. */
  owner: string;
  userId: string | null;
  channelId: string | null;
  projectId: string | null;
  topicId: string | null;
  source: MemorySource;
  importance: number;
  pinned: boolean;
  sourceMessageIds: readonly number[];
  sourceIds: readonly number[];
  embedding: StoredEmbedding | null;
  /** Text the full-text leg also finds the memory by, without being part of it (the message a turn answers). */
  searchContext?: string | null;
  /** The message `searchContext` quotes: purging its sender clears the context. */
  searchContextMessageId?: number | null;
  /**
   * When what the memory says was said or became true (epoch milliseconds): the time of the message it
   * comes from. Left out: the write's time. `createdAt` is always the write's time.
   */
  validFrom?: number;
}

/** Fields an update may change. `embedding: null` removes the vector; leaving it out keeps it. */
export interface MemoryChanges {
  content?: string;
  category?: string;
  sector?: Sector;
  importance?: number;
  /**
   * The time (epoch milliseconds) up to which the stored importance's decay is applied: an edit of
   * importance sets it to the edit's time, so the value given is the value as of then. No version row of its own.
   */
  decayedAt?: number;
  pinned?: boolean;
  embedding?: StoredEmbedding | null;
  /** Replaces the provenance list (extraction appends the message that confirmed the memory). No version row of its own. */
  sourceMessageIds?: readonly number[];
  /** When what the memory says was said (epoch milliseconds): a later message restating it moves it. No version row of its own. */
  validFrom?: number;
}

/** The filters of `list`, with the viewer already turned into the owner keys it may see (`null`: all). */
export type MemoryListQuery = Omit<ParsedListFilter, 'viewer'> & { owners: readonly string[] | null };

/** Who writes, when, and why; recorded in the version row of every write. */
export interface WriteContext {
  at: number;
  actor: string | null;
  reason?: string | null;
  /**
   * The write derives from data already stored durably (extraction from the message log, which a
   * watermark makes re-runnable): it may skip waiting for the disk, and becomes durable with the next
   * durable write. A power cut may undo it, never a process crash; nothing acknowledged depends on it.
   */
  deferred?: boolean;
  /**
   * The owner keys of the viewer the caller checked the memory against (an edit, forget or restore on behalf of a
   * viewer): the write is refused, NOT_FOUND as for a memory the viewer may not see, when the memory is no longer of
   * one of them (an audience change moved it after the check; attack 31c). Left out: not checked.
   */
  visibleTo?: readonly string[];
}

/** NOT_FOUND when a write made on behalf of a viewer (`WriteContext.visibleTo`) finds the memory out of its owner keys. */
export function assertStillVisible(owner: string, id: number, context: WriteContext): void {
  if (context.visibleTo !== undefined && !context.visibleTo.includes(owner)) {
    throw new MnemeError(ErrorCode.NotFound, `memory ${id} does not exist`);
  }
}

/** A search restricted to memories whose owner key is in `owners` (`null`: every owner, for admin tools). */
interface ScopedSearch {
  owners: readonly string[] | null;
  limit: number;
  /** Also find memories that faded (decay put them to rest; ADR 9): recall asks for them, maintenance does not. */
  includeFaded?: boolean;
}

/** Words to match, OR-ed; the adapter quotes them, so no user text reaches its query syntax. */
export interface TextSearch extends ScopedSearch {
  terms: readonly string[];
  /**
   * Search by at most this many of the terms, the rarest in the store (a candidate search of
   * maintenance, bounded whatever the text's length). Omitted: every term.
   */
  maxTerms?: number;
  /**
   * The caller counted every term just before, in the same transaction (`termCounts` with
   * `exactUpTo`), and each is in at most this many memories: a store that weighs which terms are very
   * common (the SQLite one, from its remembered counts) need not look them up, and may rank by the counts it
   * answered then (the SQLite one, while nothing was written since). Omitted: it looks them up.
   */
  postingsAtMost?: number;
}

export interface VectorSearch extends ScopedSearch {
  vector: Float32Array;
  model: string;
  /**
   * Only hits at least this close (cosine) are wanted: the store leaves out the others and may use the
   * bound to search less (a neighbour search of maintenance, not a recall). Omitted: no bound.
   */
  minScore?: number;
}

/** One of linking's neighbour searches (`searchOlderNeighbours`): a bounded vector search for one memory. */
export interface OlderNeighbourSearch extends VectorSearch {
  minScore: number;
  /** The id of the memory searched for: only hits of smaller ids are answered. */
  olderThan: number;
}

/** Options of `termCounts`. */
export interface TermCountOptions {
  /**
   * Count among the memories whose owner key is in `owners` only: the viewer's (recall) or the ones
   * being searched (extraction, consolidation), so no statistic depends on memories the asker may not
   * see (ADR 25). `null`: every owner (the global viewer, admin tools).
   */
  owners: readonly string[] | null;
  /** Count exactly, now, up to this many memories a term (more: this plus one). */
  exactUpTo?: number;
}

/** What `termCounts` answers. */
export interface TermCounts {
  /** The number of memories of the owners counted among, archived ones too (an upper bound is fine). */
  memories: number;
  /** For each term asked about, in order: the memories the full-text index finds it in. */
  counts: number[];
}

/** One candidate of a search leg, best first; `score` is higher-is-better (negated BM25, or 1 - cosine distance). */
export interface SearchHit {
  id: number;
  score: number;
}

/**
 * What one retrieval writes back to one memory besides `access_count + 1` and `last_accessed`:
 * the reinforcement fields the active decay policy moves (left out: unchanged).
 */
export interface MemoryTouch {
  id: number;
  strength?: number;
  salience?: number;
  importance?: number;
  /**
   * The memory's stored signals the reinforcement was computed from (as the recall read them): each reinforced
   * signal is written only while the memory still holds the value it was computed from, so an edit (an importance
   * Bob set), a decay step or another retrieval written since is not replaced by a value computed before it; the
   * retrieval is counted all the same (attack 31c). Left out: written as given.
   */
  read?: { strength: number; salience: number; importance: number };
}

/** What `MemoryStore.stats` counts; how many memories are expiring is the decay policy's, computed in core. */
export type StoredMemoryStats = Omit<MemoryStats, 'expiring'>;

/** Options of `MemoryStore.insert`. */
export interface InsertOptions {
  /**
   * Refuse (NOT_FOUND, none of the memories stored) when a message of a memory's `sourceMessageIds`
   * or a memory of its `sourceIds` no longer exists: a user was purged, by this process or another,
   * while the memories were being built from what they said. Checked inside the insert's transaction,
   * so a purge committed before it is always seen (messages and memories are deleted by purges only).
   * A memory of its `sourceIds` that is no longer in its owner (moved by an audience change, ADR 5,
   * 2026-12-03, while it was being built) refuses it too (CONFLICT): it would quote that memory to the
   * audience the memory left. So does one forgotten (or merged away) since (CONFLICT, attack 31c): it would bring back
   * what was forgotten; one put to rest by decay stays recallable and does not.
   */
  sourcesMustExist?: boolean;
  /**
   * A maintenance task's state to write in the insert's transaction, as `MaintenanceStateStore.set` writes it: the
   * memories and the state commit together, or neither (a refused insert, a crash). A task's step and the watermark
   * past it (episodes), or the record that a step is done (dream's per-owner rows): a process killed after the
   * memories are stored has moved the state too, so the next run does not write them again.
   */
  state?: MaintenanceStateWrite;
}

/** A `maintenance_state` row's changes, written with an insert (`InsertOptions.state`). */
export interface MaintenanceStateWrite {
  channelId: string;
  task: string;
  changes: MaintenanceStateChanges;
}

/** The refusal of an insert whose memory was built from memories that an audience change moved out of its owner meanwhile. */
export function sourcesMoved(memory: NewMemory, memoryIds: readonly number[]): MnemeError {
  return new MnemeError(
    ErrorCode.Conflict,
    `the ${memory.source} memory was built from memor${memoryIds.length > 1 ? 'ies' : 'y'} ${memoryIds.join(', ')}, which ` +
      `left ${memory.owner} meanwhile (an audience narrowed); nothing was stored`,
  );
}

/**
 * The refusal of an insert whose memory was built from memories forgotten (or merged away) meanwhile: it would bring
 * back into recall what was forgotten (attack 31c, a dream insight on a memory forgotten while the dreamer reflected).
 */
export function sourcesForgotten(memory: NewMemory, memoryIds: readonly number[]): MnemeError {
  return new MnemeError(
    ErrorCode.Conflict,
    `the ${memory.source} memory was built from memor${memoryIds.length > 1 ? 'ies' : 'y'} ${memoryIds.join(', ')}, which ` +
      `${memoryIds.length > 1 ? 'were' : 'was'} forgotten meanwhile; nothing was stored`,
  );
}

/** The refusal of an insert whose memory was built from a message or memory that a purge deleted meanwhile. */
export function sourcesGone(
  memory: NewMemory,
  messageIds: readonly number[],
  memoryIds: readonly number[],
): MnemeError {
  const gone = [
    ...(messageIds.length > 0 ? [`message${messageIds.length > 1 ? 's' : ''} ${messageIds.join(', ')}`] : []),
    ...(memoryIds.length > 0 ? [`memor${memoryIds.length > 1 ? 'ies' : 'y'} ${memoryIds.join(', ')}`] : []),
  ].join(' and ');
  return new MnemeError(
    ErrorCode.NotFound,
    `the ${memory.source} memory was built from ${gone}, which no longer exist (a user was purged meanwhile); nothing was stored`,
  );
}

/** Memories: the port every storage backend implements. All writes are transactional. */
export interface MemoryStore {
  /**
   * Writes text, FTS and vector of each memory, and a `create` version, in one transaction (with `options.state`,
   * a maintenance task's state too).
   */
  insert(memories: readonly NewMemory[], context: WriteContext, options?: InsertOptions): Promise<Memory[]>;
  /** Applies `changes` and writes an `update` version with the diff; refuses archived memories. */
  update(id: number, changes: MemoryChanges, context: WriteContext): Promise<Memory>;
  /**
   * Soft-deletes: sets `archived_at`, removes the vector, writes an `archive` version; a memory it
   * superseded is current again (`supersededBy` cleared). With `fade` (decay), the memory is put to
   * rest instead: archived and `faded_at` set, its vector kept so that recall can still find it, and
   * what it superseded stays superseded. A faded memory may be archived again without `fade` (a
   * `forget`): then it stops fading and its vector goes.
   */
  archive(ids: readonly number[], context: WriteContext, options?: { fade?: boolean }): Promise<Memory[]>;
  /**
   * Clears `archived_at` (and `faded_at`), stores the new vector if given, writes a `restore` version.
   * The memories it superseded (its `supersedes` links) that are still active and current are superseded
   * by it again, as its archive had made them current.
   */
  restore(id: number, embedding: StoredEmbedding | null, context: WriteContext): Promise<Memory>;
  /** The memories with these ids that exist, in the order asked. */
  get(ids: readonly number[]): Promise<Memory[]>;
  /**
   * The time (epoch milliseconds) up to which the stored decay of each of these memories is applied
   * (importance-steps downgrades, an edit of importance), for those that have one; one query.
   */
  decayedAt(ids: readonly number[]): Promise<Map<number, number>>;
  list(query: MemoryListQuery): Promise<MemoryPage>;
  /** A memory's versions after version `after` (0: from the first), oldest first, at most `limit` of them (all). */
  history(id: number, page?: { after?: number; limit?: number }): Promise<MemoryVersion[]>;
  /** Full-text candidates among active memories (and faded ones with `includeFaded`), scope-filtered inside the query. */
  searchText(search: TextSearch): Promise<SearchHit[]>;
  /**
   * How common each of `terms` is among the memories of `owners`: the number of them (archived ones too)
   * whose text the full-text index finds it in, in the order given, and the number of memories (an upper
   * bound is fine). Recall weighs query words by rarity with it. Counted over given owners, the counts are
   * those of the per-owner word counts, exact at the call (a term the index splits into several words,
   * such as `e-mail`, counts as its most common one); over every owner they may be approximate
   * (counted again only when the store grew).
   * With `exactUpTo`, each count is read from the index at the call, exact up to that many (a term in
   * more memories counts `exactUpTo + 1`), reading at most that many entries a term: two processes over
   * the same memories get the same counts, so a candidate search chosen by them (`rarestTerms`) finds
   * the same memories after a restart as without one.
   */
  termCounts(terms: readonly string[], options: TermCountOptions): Promise<TermCounts>;
  /**
   * Nearest active memories (and faded ones with `includeFaded`) by cosine, scope-filtered inside the
   * KNN query; [] when `model` is not the indexed one.
   */
  searchVector(search: VectorSearch): Promise<SearchHit[]>;
  /**
   * Linking's neighbour searches, many at once (ADR 20, 2026-12-01, session 6): for each, what
   * `searchVector` answers, less the hits whose id is not below its `olderThan`. A store may skip the
   * searches it can tell hold no older hit. Optional: linking searches a store without it one
   * `searchVector` at a time.
   */
  searchOlderNeighbours?(searches: readonly OlderNeighbourSearch[]): Promise<SearchHit[][]>;
  /**
   * Records one retrieval of each memory in a single write: `access_count + 1`, `last_accessed = at`
   * and the given reinforcement fields (each while the memory still holds its `read` value). A faded memory is brought back first (archive cleared, a
   * `restore` version with the reason `recalled after it faded`); other archived and unknown ids are
   * skipped. No version row for the retrieval itself: a retrieval is not an edit.
   */
  touch(touches: readonly MemoryTouch[], at: number): Promise<void>;
  /**
   * The `limit` active memories whose owner is in `owners` (`null`: any) used most recently: last
   * retrieval time, or creation time for a memory never retrieved; newest first. One query. With `own` (a user's
   * owner key, `user:<id>`; ADR 52), only the memories of that owner are ordered by their last retrieval, every other
   * by its creation, as if never retrieved: a user's order says nothing of other users' recalls.
   */
  recentlyAccessed(owners: readonly string[] | null, limit: number, own?: string | null): Promise<Memory[]>;
  stats(now: number): Promise<StoredMemoryStats>;
  /**
   * Hard-deletes everything about one user, in one transaction: their messages and the replies to them,
   * their memories, memories built from those messages or memories (episodes, merges, insights),
   * vectors, versions, links, memberships and API keys; a turn's search context quoting them is cleared.
   */
  purgeUser(userId: string): Promise<PurgeReport>;
  /**
   * The memories, archived ones too, that an audience change must check (ADR 5, 2026-12-03): those citing a
   * message of the channel, and those built on them (`sourceIds`, at any depth, in any owner) (`channelId`;
   * its own room's and personal memories left out), or those of the owner key (`owner`; of a room, only those
   * that cite a message of another channel or are built on memories: a room's readers read its own channel); each
   * with the channels of every message it cites or that a memory it was built on cites (at any depth), sorted.
   * Ordered by id.
   */
  citedChannels(query: { channelId: string } | { owner: string }): Promise<CitedChannels[]>;
  /**
   * Moves a memory, archived or not, into the room of a channel (its scope, owner key and channel id) or into
   * its user's personal scope (CONFLICT for a memory of no user): its vector under that owner, an `update`
   * version with `context.reason`, in one transaction.
   */
  moveTo(id: number, target: MoveTarget, context: WriteContext): Promise<Memory>;
}

/** Where `MemoryStore.moveTo` moves a memory. */
export type MoveTarget = { scope: 'room'; channelId: string } | { scope: 'personal' };

/** The owner key a memory of `userId` moves to; CONFLICT for the personal scope of a memory of no user. */
export function targetOwner(id: number, target: MoveTarget, userId: string | null): string {
  if (target.scope === 'room') return ownerKey('room', { channelId: target.channelId });
  if (userId === null)
    throw new MnemeError(ErrorCode.Conflict, `memory ${id} is of no user: it has no personal scope to move to`);
  return ownerKey('personal', { userId });
}

/** A memory and the channels of the messages it cites. */
export interface CitedChannels {
  memory: Memory;
  channelIds: string[];
}
