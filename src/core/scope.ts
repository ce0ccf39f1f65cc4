import type { Scope, Sector, Viewer } from './types.js';

/** The ids that name a memory's owner; which one matters depends on the scope. */
export interface OwnerIds {
  userId?: string | null | undefined;
  channelId?: string | null | undefined;
  projectId?: string | null | undefined;
  topicId?: string | null | undefined;
}

/** The id a scope is owned by, and the field that carries it. */
export const scopeOwnerField = {
  personal: 'userId',
  room: 'channelId',
  project: 'projectId',
  session: 'topicId',
  global: null,
} as const satisfies Record<Scope, keyof OwnerIds | null>;

/** The prefix of each scope's owner keys (see `ownerKey`). */
export const ownerPrefix: Readonly<Record<Scope, string>> = {
  personal: 'user:',
  room: 'room:',
  project: 'project:',
  session: 'topic:',
  global: 'global',
};

/**
 * The owner key stored with a memory and with its vector: `global`, `user:<id>`,
 * `room:<id>`, `project:<id>` or `topic:<id>`. Storage filters on it inside its queries.
 */
export function ownerKey(scope: Scope, ids: OwnerIds): string {
  const field = scopeOwnerField[scope];
  if (field === null) return ownerPrefix.global;
  const id = ids[field];
  if (!id) throw new Error(`scope ${scope} needs ${field}`);
  return `${ownerPrefix[scope]}${id}`;
}

/** The owner keys a viewer may see: global always, plus each scope whose id the viewer carries. */
export function visibleOwners(viewer: Viewer): string[] {
  const owners = [ownerPrefix.global];
  if (viewer.userId) owners.push(`${ownerPrefix.personal}${viewer.userId}`);
  if (viewer.channelId) owners.push(`${ownerPrefix.room}${viewer.channelId}`);
  if (viewer.projectId) owners.push(`${ownerPrefix.project}${viewer.projectId}`);
  if (viewer.topicId) owners.push(`${ownerPrefix.session}${viewer.topicId}`);
  return owners;
}

const episodicCategories = new Set(['event', 'episode', 'exchange']);

/** Events, episodes and exchanges are episodic; facts, preferences and free labels are semantic. */
export function sectorOf(category: string): Sector {
  return episodicCategories.has(category) ? 'episodic' : 'semantic';
}
