import { toIso } from '../../core/clock.js';
import type { DecayCandidate, ListedWord, MaintenanceStore, MemoryText } from '../maintenance-store.js';
import { type PostgresDatabase, withPgErrors, writePg } from './postgres-database.js';
import { memoryColumns, type PgMemoryRow, toMemory } from './postgres-memory-rows.js';
import { createPostgresMemoryWrites } from './postgres-memory-writes.js';
import type { PostgresVectorIndex } from './postgres-vector-index.js';

/** The PostgreSQL implementation of the MaintenanceStore port. */
export function createPostgresMaintenanceStore(
  database: PostgresDatabase,
  vectors: PostgresVectorIndex,
): MaintenanceStore {
  const writes = createPostgresMemoryWrites(vectors);
  const link = (type: 'consolidated' | 'supersedes') =>
    `INSERT INTO memory_links (source_id, target_id, type, strength, created_at) VALUES ($1, $2, '${type}', 1, $3)
     ON CONFLICT (source_id, target_id, type) DO NOTHING`;

  return {
    async decayCandidates(afterId, limit) {
      return withPgErrors('reading memories to decay', async () => {
        const { rows } = await database.query<PgMemoryRow>(
          `SELECT id, strength, salience, importance, last_accessed, created_at, decayed_at
           FROM memories WHERE archived_at IS NULL AND NOT pinned AND id > $1 ORDER BY id LIMIT $2`,
          [afterId, limit],
        );
        return rows.map(
          (row): DecayCandidate => ({
            id: row.id,
            strength: row.strength,
            salience: row.salience,
            importance: row.importance,
            pinned: false,
            lastAccessedAt: row.last_accessed === null ? null : toIso(row.last_accessed),
            createdAt: toIso(row.created_at),
            decayedAt: row.decayed_at,
          }),
        );
      });
    },

    async applyImportanceChanges(changes, context) {
      if (changes.length === 0) return 0;
      return writePg(database, 'storing importance downgrades', async (q) => {
        let changed = 0;
        for (const change of changes) {
          const before = (
            await q.query<PgMemoryRow>(`SELECT ${memoryColumns} FROM memories WHERE id = $1 FOR UPDATE`, [change.id])
          ).rows[0];
          if (!before || before.archived_at !== null) continue;
          if (before.importance === change.importance) {
            await q.query('UPDATE memories SET decayed_at = $1 WHERE id = $2', [change.decayedAt, change.id]);
            continue;
          }
          const after = (
            await q.query<PgMemoryRow>(
              `UPDATE memories SET importance = $1, decayed_at = $2, updated_at = $3 WHERE id = $4
               RETURNING ${memoryColumns}`,
              [change.importance, change.decayedAt, context.at, change.id],
            )
          ).rows[0];
          if (!after) continue;
          await writes.recordVersion(
            q,
            after,
            'update',
            { importance: { from: before.importance, to: after.importance } },
            context,
          );
          changed++;
        }
        return changed;
      });
    },

    async listAfter(afterId, limit) {
      return withPgErrors('reading memories', async () => {
        const { rows } = await database.query<PgMemoryRow>(
          `SELECT ${memoryColumns} FROM memories WHERE archived_at IS NULL AND id > $1 ORDER BY id LIMIT $2`,
          [afterId, limit],
        );
        return rows.map(toMemory);
      });
    },

    async textsAfter(afterId, limit) {
      return withPgErrors('reading memory texts', async () => {
        const { rows } = await database.query<MemoryText>(
          'SELECT id, owner, content FROM memories WHERE archived_at IS NULL AND id > $1 ORDER BY id LIMIT $2',
          [afterId, limit],
        );
        return rows.map((row) => ({ id: Number(row.id), owner: row.owner, content: row.content }));
      });
    },

    async recentWithVectors(model, limit) {
      return withPgErrors('reading recent memories', async () => {
        const { rows } = await database.query<PgMemoryRow>(
          `SELECT ${memoryColumns} FROM memories WHERE archived_at IS NULL AND embedding_model = $1
           ORDER BY created_at DESC, id DESC LIMIT $2`,
          [model, limit],
        );
        return rows.map(toMemory);
      });
    },

    async vectors(ids, model) {
      if (ids.length === 0 || vectors.info()?.model !== model) return new Map<number, Float32Array>();
      return withPgErrors('reading memory vectors', () => vectors.vectors(ids));
    },

    async indexStep() {
      // The PostgreSQL store has no inverted lists.
      return false;
    },

    async compactTextIndex() {
      // A GIN index has no segments to merge (its pending list is off since schema step 3).
      return false;
    },

    async latestMemoryId() {
      return withPgErrors('reading the latest memory id', async () => {
        const { rows } = await database.query<{ id: number }>('SELECT COALESCE(MAX(id), 0) AS id FROM memories');
        return rows[0]?.id ?? 0;
      });
    },

    async nearDuplicateQueue(limit) {
      return withPgErrors('reading the near-duplicate queue', async () => {
        const { rows } = await database.query<{
          entry: string;
          id: string | null;
          owner: string | null;
          content: string | null;
        }>(
          `SELECT q.id AS entry, m.id, m.owner, m.content
           FROM near_duplicate_queue q LEFT JOIN memories m ON m.id = q.memory_id ORDER BY q.id LIMIT $1`,
          [limit],
        );
        const memories: MemoryText[] = [];
        for (const { id, owner, content } of rows)
          if (id !== null && owner !== null && content !== null) memories.push({ id: Number(id), owner, content });
        return { entries: rows.map((row) => Number(row.entry)), memories };
      });
    },

    async listNearDuplicates(listings, entries) {
      if (listings.length === 0 && entries.length === 0) return;
      await writePg(database, 'listing near-duplicate words', async (q) => {
        for (const listing of listings) {
          const { rows } = await q.query<{ owner: string; content: string }>(
            'SELECT owner, content FROM memories WHERE id = $1',
            [listing.id],
          );
          const now = rows[0];
          if (now?.owner !== listing.owner || now.content !== listing.content) continue;
          await q.query('DELETE FROM near_duplicate_words WHERE memory_id = $1', [listing.id]);
          if (listing.words.length === 0) continue;
          await q.query(
            `INSERT INTO near_duplicate_words (owner, word, memory_id, position, size)
             SELECT $1, word, $2, position - 1, $3 FROM unnest($4::text[]) WITH ORDINALITY AS w(word, position)`,
            [listing.owner, listing.id, listing.size, listing.words],
          );
        }
        await q.query('DELETE FROM near_duplicate_queue WHERE id = ANY($1::bigint[])', [entries]);
      });
    },

    async listedNearDuplicates(owner, words, sizeFrom, sizeTo) {
      if (words.length === 0) return [];
      return withPgErrors('reading near-duplicate words', async () => {
        const { rows } = await database.query<{ memory_id: string; word: string; position: number; size: number }>(
          `SELECT memory_id, word, position, size FROM near_duplicate_words
           WHERE owner = $1 AND word = ANY($2::text[]) AND size BETWEEN $3 AND $4`,
          [owner, words, sizeFrom, sizeTo],
        );
        return rows.map(
          (row): ListedWord => ({
            memoryId: Number(row.memory_id),
            word: row.word,
            position: row.position,
            size: row.size,
          }),
        );
      });
    },

    async merge(merged, originalIds, context) {
      return writePg(database, 'merging memories', async (q) => {
        const sources = originalIds.map((id) => `#${id}`).join(', ');
        const row = await writes.insert(
          q,
          merged,
          { ...context, reason: context.reason ?? `merged from ${sources}` },
          'merge',
        );
        for (const id of await writes.transferSupersession(q, originalIds, row.id)) {
          await q.query(link('supersedes'), [row.id, id, context.at]);
        }
        const archived = [];
        for (const id of originalIds) {
          const after = await writes.archive(q, id, { ...context, reason: `merged into #${row.id}` });
          await q.query(link('consolidated'), [row.id, id, context.at]);
          archived.push(toMemory(after));
        }
        return { merged: toMemory(row), archived };
      });
    },
  };
}
