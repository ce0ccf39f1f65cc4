import { ErrorCode, MnemeError } from '../core/errors.js';
import type { LeftName } from '../core/speaker-label.js';
import type { Memory, MemoryVersion } from '../core/types.js';
import type { LinkType } from './link-store.js';
import type { MaintenanceState } from './maintenance-state-store.js';
import type { ChannelVisibility, SpaceKind } from './membership-store.js';
import type { Message } from './message-store.js';
import type { PolicyVersion } from './policy-store.js';

/** Times in this port are epoch milliseconds, as stored; the export format turns them into ISO 8601. */

export interface TransferUser {
  id: string;
  displayName: string | null;
  createdAt: number;
  updatedAt: number;
  /** The names the user left by renaming themselves, oldest first, with when (`users.left_name`, `left_at`; ADR 44). */
  leftNames: readonly LeftName[];
}

export interface TransferProject {
  id: string;
  name: string | null;
  managed: boolean;
  createdAt: number;
}

export interface TransferTopic {
  id: string;
  projectId: string | null;
  title: string | null;
  createdAt: number;
}

/** A row of `channels`: a channel someone declared (or ingest first saw). */
export interface TransferChannel {
  id: string;
  visibility: ChannelVisibility;
  createdAt: number;
  updatedAt: number;
}

/** One member of one space. Pages are ordered by (kind, spaceId, userId). */
export interface TransferMembership {
  kind: SpaceKind;
  spaceId: string;
  userId: string;
  addedAt: number;
}

/** A memory with everything stored about it but its vector (which belongs to one model and is rebuilt by re-embedding). */
export interface TransferMemory extends Omit<Memory, 'embeddingModel'> {
  /** The scope key recall filters on (`user:<id>`, `room:<channel>`, ...). */
  owner: string;
  decayedAt: number | null;
  searchContext: string | null;
  searchContextMessageId: number | null;
  /** For an exchange chunk: the message it starts at and its index (unique together). */
  chunkMessageId: number | null;
  chunkIndex: number | null;
}

export interface TransferLink {
  id: number;
  sourceId: number;
  targetId: number;
  type: LinkType;
  strength: number;
  createdAt: number;
}

/**
 * A row of `ingest_files`: how far `mneme ingest` got in one file (ADR 14), the record `--resume` continues
 * after. A full export carries them, so a restored database resumes a file where its source had got.
 */
export interface TransferIngestFile {
  /** The file's resolved path, as the ingest that wrote the record saw it. */
  path: string;
  /** The last line whose messages are committed (1-based). */
  line: number;
  /** SHA-256 (hex) of lines 1..line, each followed by a newline. */
  prefixSha256: string;
  /** When the record was last written. */
  updatedAt: number;
}

/**
 * A row of `idempotency_keys` whose request's work was done (its response stored, or its work committed): a full
 * export carries it without its response (ADR 37), so a retry under the key after a restore is told it was done
 * before instead of being done again. Keys of administrator keys (`admin-key:<id>`) are not carried: API keys are not.
 */
export interface TransferIdempotencyKey {
  /** The key space (`user:<id>`, `open:<label>`, `admin:<label>`). */
  principal: string;
  key: string;
  /** SHA-256 (hex) of the first request: a retry of another request under the key is refused as before. */
  requestSha256: string;
  /** The first request's response status, or null when its work committed and it stopped before answering. */
  status: number | null;
  /** Epoch ms: when the key expires, as on its source. */
  expiresAt: number;
}

/**
 * What one user may see, as the rows a per-user export reads (a data-subject access request):
 * messages of the channels in `channelIds` or sent by `userId`, and memories whose owner key is in
 * `owners` or that are global and carry `userId`.
 */
export interface TransferFilter {
  userId: string;
  channelIds: readonly string[];
  owners: readonly string[];
}

/** A memory as an import writes it: ids already remapped to this database, times in epoch milliseconds. */
export interface ImportedMemory {
  content: string;
  category: string;
  sector: Memory['sector'];
  scope: Memory['scope'];
  owner: string;
  userId: string | null;
  channelId: string | null;
  projectId: string | null;
  topicId: string | null;
  source: Memory['source'];
  importance: number;
  strength: number;
  salience: number;
  accessCount: number;
  lastAccessedAt: number | null;
  pinned: boolean;
  sourceMessageIds: readonly number[];
  sourceIds: readonly number[];
  validFrom: number;
  archivedAt: number | null;
  fadedAt: number | null;
  createdAt: number;
  updatedAt: number;
  decayedAt: number | null;
  searchContext: string | null;
  searchContextMessageId: number | null;
  chunkMessageId: number | null;
  chunkIndex: number | null;
}

/** A version row as an import writes it (its memory id already remapped). */
export type ImportedVersion = Omit<MemoryVersion, 'id' | 'createdAt'> & { createdAt: number };

/** A message as an import writes it; optional fields a later format version adds go here too. */
export interface ImportedMessage extends Omit<Message, 'id' | 'createdAt'> {
  createdAt: number;
}

/**
 * One open import: every write below happens inside a single write transaction that `commit` ends
 * and `rollback` (or any failed write) undoes entirely. Nothing else may use the database meanwhile.
 */
export interface ImportSession {
  /** Users, kept with their times and the names they left; an existing user keeps its row (INSERT OR IGNORE). */
  putUsers(users: readonly TransferUser[]): Promise<void>;
  putProjects(projects: readonly TransferProject[]): Promise<void>;
  putTopics(topics: readonly TransferTopic[]): Promise<void>;
  putChannels(channels: readonly TransferChannel[]): Promise<void>;
  putMemberships(memberships: readonly TransferMembership[]): Promise<void>;
  /** Appends messages in order (their `replyTo` already remapped); returns their new ids. */
  appendMessages(messages: readonly ImportedMessage[]): Promise<number[]>;
  /**
   * Inserts memories as given (archived, faded, access counts and times kept; no vector, no version
   * row: versions come with `addVersions`); returns their new ids.
   */
  insertMemories(memories: readonly ImportedMemory[]): Promise<number[]>;
  /** Sets references that pointed forward in the file: `[memory, supersededBy]` and `[memory, sourceIds]`. */
  setSupersededBy(pairs: ReadonlyArray<readonly [number, number]>): Promise<void>;
  setSourceIds(pairs: ReadonlyArray<readonly [number, readonly number[]]>): Promise<void>;
  addVersions(versions: readonly ImportedVersion[]): Promise<void>;
  /** Which of these reasons a `create` version already has (a mem0 import names the mem0 id there). */
  createReasons(reasons: readonly string[]): Promise<Set<string>>;
  /** Links with their times; an existing (source, target, type) is kept. */
  addLinks(links: ReadonlyArray<Omit<TransferLink, 'id'>>): Promise<void>;
  /**
   * Writes file records of `mneme ingest` as they were. CONFLICT (`ingestFileRecorded`) when the database
   * already records one of these paths: an import restores, it does not merge two histories of one file.
   * Like any failed write, that ends the import and undoes it.
   */
  putIngestFiles(files: readonly TransferIngestFile[]): Promise<void>;
  /**
   * Writes idempotency keys whose work was done, without a response (`body` null, `committed`, the lock passed): a
   * retry under one is answered CONFLICT, not done again. A key the database holds already is kept as it is.
   */
  putIdempotencyKeys(keys: readonly TransferIdempotencyKey[]): Promise<void>;
  /** Creates or replaces background-task watermarks (already remapped). */
  setWatermarks(states: readonly MaintenanceState[]): Promise<void>;
  /** Replaces every policy version by these (oldest first). */
  replacePolicy(versions: ReadonlyArray<Omit<PolicyVersion, 'createdAt'> & { createdAt: number }>): Promise<void>;
  /** Marks the database as one whose HTTP service requires an API key, as its first key does (`ApiKeyStore.everCreated`). */
  requireApiKeys(at: number): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/** Why an import into a database that is not empty is refused (CONFLICT). */
export const IMPORT_TARGET_NOT_EMPTY =
  'the database is not empty: an import restores into a new database only; give another --db (a new file)';

/** Why an import's file record is refused: the database already records the same path (CONFLICT). */
export function ingestFileRecorded(path: string, line: number): MnemeError {
  return new MnemeError(
    ErrorCode.Conflict,
    `the database already records how far mneme ingest got in ${path} (line ${line}): an import restores into a ` +
      'new database only and does not merge file records; give another --db (a new file); nothing was imported',
  );
}

/**
 * Paged reads of everything a database holds (export), and one transactional write of a whole
 * import. Pages are ordered by id (or by key) and start after the last id (or key) of the previous one.
 */
export interface TransferStore extends TransferReads {
  /** True when no user, topic, project, channel, member, message, memory or API key exists yet. */
  isEmpty(): Promise<boolean>;
  /**
   * The reads of an export over one snapshot of the database (ADR 31): each read of the returned reader sees
   * the database as it was when this resolved, whatever commits meanwhile, so the watermarks and file records
   * an export writes count exactly the work whose rows it holds. `close` ends it and must be called.
   */
  snapshot(): Promise<TransferSnapshot>;
  /**
   * Opens the write transaction of an import (waits for the write lock like any write). With
   * `mustBeEmpty`, CONFLICT (and no transaction) unless the database is empty once the lock is held:
   * another import that finished while this one waited is not imported again.
   */
  beginImport(options?: { mustBeEmpty?: boolean }): Promise<ImportSession>;
}

/** The reads of an export over one snapshot (`TransferStore.snapshot`), until `close`. */
export interface TransferSnapshot extends TransferReads {
  close(): Promise<void>;
}

/** What an export reads. */
export interface TransferReads {
  /**
   * The highest message, memory and link ids now (0 when none): an export writes no row above them, so
   * rows written while it runs (extraction, another process) never leave a reference to a row the
   * file does not hold.
   */
  horizon(): Promise<{ messageId: number; memoryId: number; linkId: number }>;
  users(after: string | null, limit: number, ids?: readonly string[]): Promise<TransferUser[]>;
  /** Whether one of these users (all, when left out) left a name (`TransferUser.leftNames`): the file is version 4. */
  hasLeftNames(ids?: readonly string[]): Promise<boolean>;
  projects(after: string | null, limit: number, ids?: readonly string[]): Promise<TransferProject[]>;
  topics(after: string | null, limit: number, ids?: readonly string[]): Promise<TransferTopic[]>;
  channels(after: string | null, limit: number, ids?: readonly string[]): Promise<TransferChannel[]>;
  /** Memberships after `after` in (kind, spaceId, userId) order; with `userId`, only that user's. */
  memberships(after: TransferMembership | null, limit: number, userId?: string): Promise<TransferMembership[]>;
  messages(afterId: number, limit: number, filter?: TransferFilter): Promise<Message[]>;
  /** Every memory (active, archived, faded) after `afterId`, by id. */
  memories(afterId: number, limit: number, filter?: TransferFilter): Promise<TransferMemory[]>;
  /** The version rows of these memories, by memory then version. */
  versions(memoryIds: readonly number[]): Promise<MemoryVersion[]>;
  /** Links after `afterId`, by id; with a filter, only links whose both ends the filter lets through. */
  links(afterId: number, limit: number, filter?: TransferFilter): Promise<TransferLink[]>;
  /** Every row of `maintenance_state`. */
  watermarks(): Promise<MaintenanceState[]>;
  /** Every row of `ingest_files` (one a file `mneme ingest` read), by path. */
  ingestFiles(): Promise<TransferIngestFile[]>;
  /**
   * The idempotency keys a full export carries (`TransferIdempotencyKey`) that expire after `now`, after `after` in
   * (principal, key) order (byte order), at most `limit`.
   */
  idempotencyKeys(
    after: { principal: string; key: string } | null,
    limit: number,
    now: number,
  ): Promise<TransferIdempotencyKey[]>;
  /** The channels, topics and projects `userId` is a member of. */
  spacesOf(userId: string): Promise<Array<{ kind: SpaceKind; id: string }>>;
  /**
   * The users, topics and projects the filter's rows name (senders, members of its channels, topics
   * and projects of its messages and memories, projects of those topics), so a per-user export can
   * write them before the rows that name them.
   */
  referencedBy(filter: TransferFilter): Promise<{ userIds: string[]; topicIds: string[]; projectIds: string[] }>;
  /** Of these message ids, those of messages that exist and that the filter lets through. */
  messageIds(ids: readonly number[], filter?: TransferFilter): Promise<Set<number>>;
  /** Of these memory ids, those of memories that exist and that the filter lets through. */
  memoryIds(ids: readonly number[], filter?: TransferFilter): Promise<Set<number>>;
}
