import { toIso } from '../../core/clock.js';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import { channelsByMemory, roomChannel, withBuiltOnThem } from '../cited-channels.js';
import {
  assertStillVisible,
  type MemoryListQuery,
  type MemoryStore,
  sourcesForgotten,
  sourcesGone,
  sourcesMoved,
} from '../memory-store.js';
import { reinforced } from '../touch-sql.js';
import { firstRow, type PostgresDatabase, withPgErrors, writePg } from './postgres-database.js';
import { writePgState } from './postgres-maintenance-state-store.js';
import { memoryColumns, type PgMemoryRow, type PgVersionRow, toMemory, toVersion } from './postgres-memory-rows.js';
import { createPostgresMemoryWrites } from './postgres-memory-writes.js';
import { createPostgresTermFrequencies } from './postgres-term-frequencies.js';
import { erasePostgresUser } from './postgres-user-purge.js';
import type { PostgresVectorIndex } from './postgres-vector-index.js';

/**
 * The PostgreSQL implementation of the MemoryStore port. Full text: `memories.fts` (a stored
 * `tsvector` of content and search context, `english`), matched by the OR of the query's lexemes and
 * ranked by the sum over the lexemes of their BM25 inverse document frequency times `ts_rank` with
 * length normalisation (`ts_rank` alone does not weigh a word by its rarity across memories).
 */
export function createPostgresMemoryStore(database: PostgresDatabase, vectors: PostgresVectorIndex): MemoryStore {
  const writes = createPostgresMemoryWrites(vectors, database);
  const frequencies = createPostgresTermFrequencies();

  return {
    async insert(memories, context, options = {}) {
      return writePg(database, 'storing memories', async (q) => {
        if (options.sourcesMustExist) {
          for (const memory of memories) {
            const missing = async (table: 'messages' | 'memories', ids: readonly number[]) => {
              if (ids.length === 0) return [];
              const { rows } = await q.query<{ id: number }>(`SELECT id FROM ${table} WHERE id = ANY($1::bigint[])`, [
                [...ids],
              ]);
              const found = new Set(rows.map((row) => Number(row.id)));
              return [...new Set(ids)].filter((id) => !found.has(id));
            };
            const messages = await missing('messages', memory.sourceMessageIds);
            const sources = await missing('memories', memory.sourceIds);
            if (messages.length + sources.length > 0) throw sourcesGone(memory, messages, sources);
            if (memory.sourceIds.length > 0) {
              const { rows } = await q.query<{ id: number }>(
                'SELECT id FROM memories WHERE id = ANY($1::bigint[]) AND owner <> $2 ORDER BY id',
                [[...memory.sourceIds], memory.owner],
              );
              if (rows.length > 0)
                throw sourcesMoved(
                  memory,
                  rows.map((row) => Number(row.id)),
                );
              const forgotten = await q.query<{ id: number }>(
                `SELECT id FROM memories WHERE id = ANY($1::bigint[]) AND archived_at IS NOT NULL AND faded_at IS NULL
                 ORDER BY id`,
                [[...memory.sourceIds]],
              );
              if (forgotten.rows.length > 0)
                throw sourcesForgotten(
                  memory,
                  forgotten.rows.map((row) => Number(row.id)),
                );
            }
          }
        }
        const stored = [];
        for (const memory of memories) stored.push(toMemory(await writes.insert(q, memory, context)));
        if (options.state) await writePgState(q, options.state.channelId, options.state.task, options.state.changes);
        return stored;
      });
    },

    async update(id, changes, context) {
      return writePg(database, `updating memory ${id}`, async (q) =>
        toMemory(await writes.update(q, id, changes, context)),
      );
    },

    async archive(ids, context, options = {}) {
      return writePg(database, 'archiving memories', async (q) => {
        const archived = [];
        for (const id of ids) archived.push(toMemory(await writes.archive(q, id, context, options.fade === true)));
        return archived;
      });
    },

    async restore(id, embedding, context) {
      return writePg(database, `restoring memory ${id}`, async (q) => {
        const before = await writes.read(q, id);
        assertStillVisible(before.owner, id, context);
        if (before.archived_at === null) throw new MnemeError(ErrorCode.Conflict, `memory ${id} is not archived`);
        // A faded memory kept its vector: it stays unless a new one is given.
        const kept = before.faded_at === null ? null : before.embedding_model;
        const sql = `UPDATE memories SET archived_at = NULL, faded_at = NULL, updated_at = $1, embedding_model = $2
          WHERE id = $3 RETURNING ${memoryColumns}`;
        const after = firstRow(await q.query<PgMemoryRow>(sql, [context.at, embedding?.model ?? kept, id]), sql);
        if (embedding) await vectors.put(q, id, after.owner, embedding);
        // A restored memory supersedes again what its `supersedes` links name, when still current.
        if (after.superseded_by === null) {
          await q.query(
            `UPDATE memories SET superseded_by = $1 WHERE archived_at IS NULL AND superseded_by IS NULL
             AND id IN (SELECT target_id FROM memory_links WHERE source_id = $1 AND type = 'supersedes')`,
            [id],
          );
        }
        await writes.recordVersion(
          q,
          after,
          'restore',
          { archivedAt: { from: toIso(before.archived_at), to: null } },
          context,
        );
        return toMemory(after);
      });
    },

    async get(ids) {
      if (ids.length === 0) return [];
      return withPgErrors('reading memories', async () => {
        const { rows } = await database.query<PgMemoryRow>(
          `SELECT ${memoryColumns} FROM memories WHERE id = ANY($1::bigint[])`,
          [[...ids]],
        );
        const byId = new Map(rows.map((row) => [row.id, row]));
        return ids.flatMap((id) => {
          const row = byId.get(id);
          return row ? [toMemory(row)] : [];
        });
      });
    },

    async decayedAt(ids) {
      if (ids.length === 0) return new Map();
      return withPgErrors('reading decay times', async () => {
        const { rows } = await database.query<{ id: number; decayed_at: number }>(
          'SELECT id, decayed_at FROM memories WHERE decayed_at IS NOT NULL AND id = ANY($1::bigint[])',
          [[...ids]],
        );
        return new Map(rows.map((row) => [row.id, row.decayed_at]));
      });
    },

    async list(filter) {
      return withPgErrors('listing memories', async () => {
        const { where, values } = listConditions(filter);
        const counted = await database.query<{ total: number }>(
          `SELECT count(*) AS total FROM memories ${where}`,
          values,
        );
        const { rows } = await database.query<PgMemoryRow>(
          `SELECT ${memoryColumns} FROM memories ${where} ORDER BY created_at DESC, id DESC
           LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
          [...values, filter.limit, filter.offset],
        );
        return {
          memories: rows.map(toMemory),
          total: counted.rows[0]?.total ?? 0,
          limit: filter.limit,
          offset: filter.offset,
        };
      });
    },

    async history(id, page = {}) {
      return withPgErrors(`reading the history of memory ${id}`, async () => {
        const exists = await database.query('SELECT 1 FROM memories WHERE id = $1', [id]);
        if (exists.rows.length === 0) throw new MnemeError(ErrorCode.NotFound, `memory ${id} does not exist`);
        const { rows } = await database.query<PgVersionRow>(
          'SELECT * FROM memory_versions WHERE memory_id = $1 AND version > $2::bigint ORDER BY version LIMIT $3',
          // LIMIT NULL: every version. `after` is any whole number to 2^53, past the integer column's 32 bits: bigint.
          [id, page.after ?? 0, page.limit ?? null],
        );
        return rows.map(toVersion);
      });
    },

    async searchText({ terms: asked, owners, limit, includeFaded = false, maxTerms }) {
      if ((owners !== null && owners.length === 0) || limit <= 0 || asked.length === 0) return [];
      return withPgErrors('searching memories', async () => {
        const terms = maxTerms === undefined ? asked : await frequencies.rarest(database, asked, maxTerms, owners);
        if (terms.length === 0) return [];
        const search = await frequencies.weighted(database, terms, limit, owners);
        if (search === null) return [];
        const state = includeFaded ? '(m.archived_at IS NULL OR m.faded_at IS NOT NULL)' : 'm.archived_at IS NULL';
        // The candidates through the GIN index (the tsquery a parameter the planner knows), each scored
        // by the sum over the query's lexemes it contains of idf x ts_rank.
        const { rows } = await database.query<{ id: number; score: number }>(
          `SELECT m.id,
             (SELECT sum(w.idf * ts_rank(m.fts, w.query, 1))
              FROM unnest($3::tsquery[], $4::float8[]) AS w(query, idf) WHERE m.fts @@ w.query) AS score
           FROM memories m
           WHERE m.fts @@ $1::tsquery AND ${state} ${owners === null ? '' : 'AND m.owner = ANY($5::text[])'}
           ORDER BY score DESC, m.id LIMIT $2`,
          [
            search.candidates,
            limit,
            search.lexemes.map((lexeme) => lexeme.query),
            search.lexemes.map((lexeme) => lexeme.idf),
            ...(owners === null ? [] : [[...owners]]),
          ],
        );
        return rows.map((row) => ({ id: row.id, score: row.score }));
      });
    },

    async termCounts(terms, { owners, exactUpTo }) {
      return withPgErrors('counting search terms', () =>
        exactUpTo === undefined
          ? frequencies.counts(database, terms, owners)
          : frequencies.exactCounts(database, terms, exactUpTo, owners),
      );
    },

    async searchVector({ vector, model, owners, limit, includeFaded = false, minScore }) {
      return withPgErrors('searching memory vectors', () =>
        vectors.search({ vector, model, owners, limit, includeFaded, ...(minScore === undefined ? {} : { minScore }) }),
      );
    },

    async touch(touches, at) {
      if (touches.length === 0) return;
      await writePg(database, 'recording retrievals', async (q) => {
        const ids = touches.map((touch) => touch.id);
        // Access counts and reinforcement are statistics: unless a faded memory is revived (a change
        // with a version), the transaction commits without waiting for the WAL flush
        // (`synchronous_commit` off for it alone). A server crash may lose the last touches, never a
        // memory, and never leaves the database inconsistent.
        const { rows } = await q.query<{ faded: number[] }>(
          `SELECT set_config('synchronous_commit', 'off', true),
             array(SELECT id FROM memories WHERE faded_at IS NOT NULL AND id = ANY($1::bigint[]) ORDER BY id) AS faded`,
          [ids],
        );
        const faded = (rows[0]?.faded ?? []).map(Number);
        if (faded.length > 0) await q.query("SELECT set_config('synchronous_commit', 'on', true)");
        for (const id of faded) {
          await writes.revive(q, id, { at, actor: null, reason: 'recalled after it faded' });
        }
        await q.query(
          `UPDATE memories SET
             access_count = access_count + 1,
             last_accessed = $1,
             ${reinforced('strength')}, ${reinforced('salience')}, ${reinforced('importance')}
           FROM jsonb_to_recordset($2::jsonb) AS touched(id bigint, strength double precision,
             salience double precision, importance double precision, read_strength double precision,
             read_salience double precision, read_importance double precision)
           WHERE memories.id = touched.id AND memories.archived_at IS NULL`,
          [
            at,
            JSON.stringify(
              touches.map(({ read, ...touch }) =>
                read === undefined
                  ? touch
                  : {
                      ...touch,
                      read_strength: read.strength,
                      read_salience: read.salience,
                      read_importance: read.importance,
                    },
              ),
            ),
          ],
        );
      });
    },

    async recentlyAccessed(owners, limit, own = null) {
      if (limit <= 0 || (owners !== null && owners.length === 0)) return [];
      // A user's order (ADR 52): the retrievals of its own memories only.
      const accessed = own === null ? 'last_accessed' : 'CASE WHEN owner = $2 THEN last_accessed END';
      const ownersAt = own === null ? '$2' : '$3';
      return withPgErrors('reading recently accessed memories', async () => {
        const { rows } = await database.query<PgMemoryRow>(
          `SELECT ${memoryColumns} FROM memories
           WHERE archived_at IS NULL ${owners === null ? '' : `AND owner = ANY(${ownersAt}::text[])`}
           ORDER BY COALESCE(${accessed}, created_at) DESC, id DESC LIMIT $1`,
          [limit, ...(own === null ? [] : [own]), ...(owners === null ? [] : [[...owners]])],
        );
        return rows.map(toMemory);
      });
    },

    async stats(now) {
      return withPgErrors('counting memories', async () => {
        const totals = firstRow(
          await database.query<{
            total: number;
            active: number;
            archived: number;
            pinned: number;
            addedLast7Days: number;
          }>(
            `SELECT count(*) AS total,
               count(*) FILTER (WHERE archived_at IS NULL) AS active,
               count(*) FILTER (WHERE archived_at IS NOT NULL) AS archived,
               count(*) FILTER (WHERE pinned AND archived_at IS NULL) AS pinned,
               count(*) FILTER (WHERE created_at >= $1) AS "addedLast7Days"
             FROM memories`,
            [now - 7 * 24 * 60 * 60 * 1000],
          ),
          'memory totals',
        );
        const grouped = async (column: 'scope' | 'category') =>
          Object.fromEntries(
            (
              await database.query<{ key: string; count: number }>(
                // Byte order, as SQLite sorts (a group a key: nothing for an index to keep).
                `SELECT ${column} AS key, count(*) AS count FROM memories WHERE archived_at IS NULL
                 GROUP BY ${column} ORDER BY ${column} COLLATE "C"`,
              )
            ).rows.map((row) => [row.key, row.count]),
          );
        const mostAccessed = (
          await database.query<{ id: number; content: string; access_count: number; last_accessed: number | null }>(
            `SELECT id, content, access_count, last_accessed FROM memories
             WHERE archived_at IS NULL AND access_count > 0 ORDER BY access_count DESC, id LIMIT 5`,
          )
        ).rows.map((row) => ({
          id: row.id,
          content: row.content,
          accessCount: row.access_count,
          lastAccessedAt: row.last_accessed === null ? null : toIso(row.last_accessed),
        }));
        const count = async (table: 'messages' | 'memory_links') =>
          (await database.query<{ count: number }>(`SELECT count(*) AS count FROM ${table}`)).rows[0]?.count ?? 0;
        return {
          ...totals,
          byScope: await grouped('scope'),
          byCategory: await grouped('category'),
          mostAccessed,
          messages: await count('messages'),
          links: await count('memory_links'),
        };
      });
    },

    async purgeUser(userId) {
      return erasePostgresUser(database, vectors, userId);
    },

    async citedChannels(query) {
      return withPgErrors('reading the channels memories cite', async () => {
        let ids: number[];
        if ('channelId' in query) {
          // The memories built on those citing the channel are found among every memory built on others.
          const { rows: builtOn } = await database.query<{ id: number; source_ids: number[] }>(
            'SELECT id, source_ids FROM memories WHERE cardinality(source_ids) > 0',
          );
          const { rows } = await database.query<{ id: number }>(
            `SELECT id FROM memories WHERE source_message_ids && ARRAY(SELECT id FROM messages WHERE channel_id = $1)`,
            [query.channelId],
          );
          ids = withBuiltOnThem(
            rows.map((row) => Number(row.id)),
            new Map(builtOn.map((row) => [Number(row.id), row.source_ids.map(Number)] as const)),
          );
        } else {
          // Of a room, only the memories citing another channel's message or built on memories (see the port).
          const { rows } = await database.query<{ id: number }>(
            `SELECT id FROM memories m WHERE owner = $1 AND ($2::text IS NULL OR cardinality(source_ids) > 0
              OR EXISTS (SELECT 1 FROM messages msg WHERE msg.id = ANY(m.source_message_ids) AND msg.channel_id <> $2))`,
            [query.owner, roomChannel(query.owner)],
          );
          ids = rows.map((row) => Number(row.id));
        }
        const { rows } = await database.query<PgMemoryRow>(
          `SELECT ${memoryColumns} FROM memories WHERE id = ANY($1::bigint[])
            AND ($2::text IS NULL OR (owner <> $2 AND owner NOT LIKE 'user:%')) ORDER BY id`,
          [ids, 'channelId' in query ? `room:${query.channelId}` : null],
        );
        const memories = rows.map(toMemory);
        const asked = memories.map((memory) => memory.id);
        // Each memory and a channel it cites, itself or through the memories it was built on at any depth.
        const { rows: cited } = await database.query<{ memory_id: string | number; channel_id: string }>(
          `WITH RECURSIVE reach(start, id) AS (
              SELECT id, id FROM unnest($1::bigint[]) AS id
              UNION
              SELECT reach.start, built.on_id FROM reach JOIN memories m ON m.id = reach.id,
                unnest(m.source_ids) AS built(on_id)
            )
            SELECT DISTINCT reach.start AS memory_id, msg.channel_id FROM reach JOIN memories m ON m.id = reach.id
              JOIN messages msg ON msg.id = ANY(m.source_message_ids)`,
          [asked],
        );
        const channels = channelsByMemory(
          asked,
          cited.map((row) => ({ memoryId: Number(row.memory_id), channelId: row.channel_id })),
        );
        return memories.map((memory) => ({ memory, channelIds: channels.get(memory.id) ?? [] }));
      });
    },

    async moveTo(id, target, context) {
      return writePg(database, `moving memory ${id}`, async (q) =>
        toMemory(await writes.moveTo(q, id, target, context)),
      );
    },
  };
}

function listConditions(filter: MemoryListQuery): { where: string; values: unknown[] } {
  const conditions: string[] = [];
  const values: unknown[] = [];
  const equal = (column: string, value: unknown) => {
    if (value === undefined) return;
    values.push(value);
    conditions.push(`${column} = $${values.length}`);
  };
  equal('scope', filter.scope);
  equal('user_id', filter.userId);
  equal('channel_id', filter.channelId);
  equal('project_id', filter.projectId);
  equal('topic_id', filter.topicId);
  equal('category', filter.category);
  if (filter.owners !== null) {
    values.push([...filter.owners]);
    conditions.push(`owner = ANY($${values.length}::text[])`);
  }
  if (filter.archived === 'exclude') conditions.push('archived_at IS NULL');
  if (filter.archived === 'only') conditions.push('archived_at IS NOT NULL');
  return { where: conditions.length ? `WHERE ${conditions.join(' AND ')}` : '', values };
}
