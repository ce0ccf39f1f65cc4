import type Database from 'better-sqlite3';

/** When every memory {@link insertOwnedMemory} writes was made, changed and became valid. */
const AT = Date.parse('2024-06-15T12:00:00.000Z');

/** A memory's scope, its user (personal scope only) and its owner key, as the audience tests write them. */
export type Ownership = readonly [scope: string, user: string | null, owner: string];

/** Two users, a room and `global`: the owner keys most audience tests write under. */
export const AUDIENCE_OWNERS = {
  ana: ['personal', 'ana', 'user:ana'],
  ben: ['personal', 'ben', 'user:ben'],
  deck: ['room', null, 'room:deck'],
  global: ['global', null, 'global'],
} as const satisfies Record<string, Ownership>;
export type AudienceOwnerName = keyof typeof AUDIENCE_OWNERS;

/**
 * Inserts a manual fact of that owner key straight into `memories` (its triggers index its text and count its
 * words), under `id` when given; returns its id. The audience tests' way to write a memory without the store.
 */
export function insertOwnedMemory(
  database: Database.Database,
  [scope, user, owner]: Ownership,
  content: string,
  id: number | null = null,
): number {
  return Number(
    database
      .prepare(`INSERT INTO memories
        (id, content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
         created_at, updated_at)
        VALUES (?, ?, NULL, 'fact', 'semantic', ?, ?, ?, 'manual', 0.5, ${AT}, ${AT}, ${AT})`)
      .run(id, content, scope, user, owner).lastInsertRowid,
  );
}
