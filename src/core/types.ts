/** Who may see a memory. */
export type Scope = 'personal' | 'room' | 'project' | 'session' | 'global';

/** Semantic memories are facts and preferences; episodic ones are events, episodes and exchanges. */
export type Sector = 'semantic' | 'episodic';

/** The built-in categories; any other non-empty label is accepted too. */
export type KnownCategory = 'fact' | 'preference' | 'event' | 'episode' | 'general';

/** Which write path produced a memory. */
export type MemorySource =
  | 'manual'
  | 'conversation'
  | 'work'
  | 'extraction'
  | 'exchange'
  | 'episode'
  | 'consolidation'
  | 'dream'
  | 'command';

/** A durable item the agent may recall. Times are ISO 8601 strings. */
export interface Memory {
  id: number;
  content: string;
  category: string;
  sector: Sector;
  scope: Scope;
  userId: string | null;
  channelId: string | null;
  projectId: string | null;
  topicId: string | null;
  source: MemorySource;
  importance: number;
  strength: number;
  salience: number;
  accessCount: number;
  lastAccessedAt: string | null;
  pinned: boolean;
  sourceMessageIds: number[];
  sourceIds: number[];
  validFrom: string;
  supersededBy: number | null;
  archivedAt: string | null;
  /**
   * When decay put the memory to rest (ADR 9): it is archived, but recall still finds it, ranked below
   * active memories, and a recall that returns it brings it back. Null for an active memory and for one
   * archived by `forget` or a merge, which recall never sees.
   */
  fadedAt: string | null;
  createdAt: string;
  updatedAt: string;
  embeddingModel: string | null;
}

/** The (user, channel, project, topic) on whose behalf a search runs. */
export interface Viewer {
  userId?: string | undefined;
  channelId?: string | undefined;
  projectId?: string | undefined;
  topicId?: string | undefined;
}

/** What a version row records. */
export type VersionAction = 'create' | 'update' | 'archive' | 'restore' | 'merge';

/** The fields of a memory that a version snapshots and diffs. */
export interface MemorySnapshot {
  content: string;
  category: string;
  importance: number;
  pinned: boolean;
  archivedAt: string | null;
}

/** One entry of a memory's history. */
export interface MemoryVersion {
  id: number;
  memoryId: number;
  version: number;
  action: VersionAction;
  actor: string | null;
  reason: string | null;
  changes: Partial<Record<keyof MemorySnapshot, { from: unknown; to: unknown }>>;
  snapshot: MemorySnapshot;
  createdAt: string;
}

/** Totals for the analytics view. */
export interface MemoryStats {
  total: number;
  active: number;
  archived: number;
  pinned: number;
  byScope: Record<string, number>;
  byCategory: Record<string, number>;
  addedLast7Days: number;
  /**
   * Active, unpinned memories the engine's decay policy will archive or remove within the next 7 days
   * unless they are retrieved (those already past its line, not yet archived by maintenance, included);
   * always 0 under a policy that never archives (recency-only).
   */
  expiring: number;
  mostAccessed: Array<Pick<Memory, 'id' | 'content' | 'accessCount' | 'lastAccessedAt'>>;
  messages: number;
  links: number;
}

/** What purging one user removed. */
export interface PurgeReport {
  userId: string;
  messages: number;
  memories: number;
  vectors: number;
  versions: number;
  links: number;
  /** API keys of the user deleted by the purge (they no longer authenticate). */
  apiKeys: number;
}

/** A page of memories. */
export interface MemoryPage {
  memories: Memory[];
  total: number;
  limit: number;
  offset: number;
}
