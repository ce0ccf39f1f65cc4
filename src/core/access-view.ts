import { type OwnerIds, ownerKey } from './scope.js';
import type { Scope } from './types.js';

/** The fields a retrieval writes that say when and how often a memory was retrieved. */
interface AccessFields extends OwnerIds {
  scope: Scope;
  accessCount: number;
  lastAccessedAt: string | null;
}

/** What a reader is shown of a memory's retrievals (ADR 52): applied to memories as stored, before anything reads them. */
export interface AccessView {
  <M extends AccessFields>(memory: M): M;
  /** The owner key whose memories' retrievals alone the reader sees (`user:<id>`); null: every memory's. */
  readonly own: string | null;
}

/** The administrator's view: every memory's retrievals as stored. */
export const everyAccess: AccessView = Object.assign(<M extends AccessFields>(memory: M): M => memory, { own: null });

/**
 * User `userId`'s view (ADR 52): the retrievals of its own personal memories, which no other user reads; any other
 * memory (room, project, session, global: others read it, and their recalls touch it) as never retrieved (access count
 * 0, no last access), so its recall's scores, its recent-first order and the decaying values it is shown (computed
 * from the last access) say nothing of when or how often another user's recalls found it.
 */
export function accessOf(userId: string): AccessView {
  const own = ownerKey('personal', { userId });
  const view = <M extends AccessFields>(memory: M): M =>
    ownerKey(memory.scope, memory) === own || (memory.accessCount === 0 && memory.lastAccessedAt === null)
      ? memory
      : { ...memory, accessCount: 0, lastAccessedAt: null };
  return Object.assign(view, { own });
}
