/** The kinds of edge between memories. */
export type LinkType = 'co_extracted' | 'consolidated' | 'semantic' | 'supersedes';

export interface NewLink {
  sourceId: number;
  targetId: number;
  type: LinkType;
  /** 0..1; 1 unless the link has a measure (a semantic link's cosine). */
  strength?: number;
}

export interface MemoryLink {
  sourceId: number;
  targetId: number;
  type: LinkType;
  strength: number;
  createdAt: string;
}

/** A memory one hop from a seed memory. */
export interface LinkedMemory {
  id: number;
  /** The seed it is linked to. */
  linkedTo: number;
  type: LinkType;
  strength: number;
}

/** Directed, typed edges between memories, queried both ways. */
export interface LinkStore {
  /**
   * Adds links; an existing (source, target, type) keeps its row and takes the new strength. Returns how
   * many are new. `deferred` as in `WriteContext.deferred`.
   */
  add(links: readonly NewLink[], at: number, options?: { deferred?: boolean }): Promise<number>;
  /** Every link from or to this memory. */
  of(memoryId: number): Promise<MemoryLink[]>;
  /**
   * Active memories one hop from any of `ids` (either direction), whose owner is in `owners`
   * (`null`: any), excluding the seeds themselves; strongest first, at most `limit`. One query.
   */
  neighbours(ids: readonly number[], owners: readonly string[] | null, limit: number): Promise<LinkedMemory[]>;
  /**
   * Deletes links whose source or target is archived; returns how many. `consolidated` links stay:
   * they record which archived originals a merged memory replaced.
   */
  removeArchived(): Promise<number>;
}
