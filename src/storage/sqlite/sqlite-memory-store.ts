import type Database from 'better-sqlite3';
import { toIso } from '../../core/clock.js';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import { ownerPrefix } from '../../core/scope.js';
import { channelsByMemory, roomChannel, withBuiltOnThem } from '../cited-channels.js';
import type { MemoryListQuery, MemoryStore, SearchHit } from '../memory-store.js';
import { assertStillVisible, sourcesForgotten, sourcesGone, sourcesMoved } from '../memory-store.js';
import { reinforced } from '../touch-sql.js';
import { getRow, preparedOnUse, readInTransaction, readSqlite, writeSqlite } from './sqlite-database.js';
import { ftsQuery } from './sqlite-fts-query.js';
import { createSqliteStateWriter } from './sqlite-maintenance-state-store.js';
import {
  type MemoryRow,
  memoryColumns,
  memoryRowOf,
  toMemory,
  toVersion,
  type VersionRow,
} from './sqlite-memory-rows.js';
import { readSqliteMemoryStats } from './sqlite-memory-stats.js';
import { createSqliteMemoryWrites } from './sqlite-memory-writes.js';
import { createSqliteOwnerWords, type VisibleCounts } from './sqlite-owner-words.js';
import { COMMON_MIN_MEMORIES, createSqliteTermFrequencies } from './sqlite-term-frequencies.js';
import { eraseSqliteUser } from './sqlite-user-purge.js';
import { placeholders, type SqliteVectorIndex } from './sqlite-vector-index.js';
import { createSqliteVisibleRanking } from './sqlite-visible-ranking.js';

/** The SQLite implementation of the MemoryStore port. */
export function createSqliteMemoryStore(
  database: Database.Database,
  vectors: SqliteVectorIndex,
  options: { textSnapshotAfter?: number | undefined } = {},
): MemoryStore {
  const writes = createSqliteMemoryWrites(database, vectors);
  const writeState = createSqliteStateWriter(database);
  const statements = {
    messagesAmong: preparedOnUse<[string], { id: number }>(
      database,
      'SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(?))',
    ),
    memoriesAmong: preparedOnUse<[string], { id: number; owner: string; forgotten: number }>(
      database,
      `SELECT id, owner, archived_at IS NOT NULL AND faded_at IS NULL AS forgotten
        FROM memories WHERE id IN (SELECT value FROM json_each(?))`,
    ),
    byIds: preparedOnUse<[string], unknown[]>(
      database,
      `SELECT ${memoryColumns} FROM memories WHERE id IN (SELECT value FROM json_each(?))`,
    ),
    // The memories an audience change checks (ADR 5, 2026-12-03): those citing a message of a channel, or
    // those of an owner key, archived ones too; with what memories are built on and the channels they cite.
    citingChannel: preparedOnUse<[string], { id: number }>(
      database,
      `SELECT DISTINCT s.memory_id AS id FROM messages msg JOIN memory_source_messages s ON s.message_id = msg.id
        WHERE msg.channel_id = ?`,
    ),
    // An owner's memories; of a room (`channel` its channel), only those citing another channel's message or built
    // on memories: the others cite what the room's readers read (session 18: a sender's first message in a channel
    // read every memory of its room, 500 at the bench's 100,000). From migration 27 by the cited messages' channels
    // kept beside the citations and the index of memories built on others by owner: no row of a memory or a message
    // read (session 19: a millisecond for a room of 500 memories); a citation whose channel is not known (NULL: the
    // message was not there when the memory was written) counts as one of another channel. A file at an older
    // schema (a test of the migrations) is read as before.
    ofOwner: preparedOnUse<{ owner: string; channel: string | null }, { id: number }>(
      database,
      database
        .prepare<[], number>(
          "SELECT count(*) FROM pragma_table_info('memory_source_messages') WHERE name = 'channel_id'",
        )
        .pluck()
        .get() === 1
        ? `SELECT m.id AS id FROM memories m INDEXED BY memories_by_owner WHERE m.owner = @owner
            AND (@channel IS NULL OR EXISTS (
              SELECT 1 FROM memory_source_messages s INDEXED BY memory_source_messages_by_memory
              WHERE s.memory_id = m.id AND (s.channel_id IS NULL OR s.channel_id <> @channel)))
          UNION
          SELECT id FROM memories INDEXED BY memories_built_on
            WHERE @channel IS NOT NULL AND owner = @owner AND source_ids <> '[]'`
        : `SELECT m.id AS id FROM memories m INDEXED BY memories_by_owner WHERE m.owner = @owner
            AND (@channel IS NULL OR m.source_ids <> '[]' OR EXISTS (
              SELECT 1 FROM memory_source_messages s JOIN messages msg ON msg.id = s.message_id
              WHERE s.memory_id = m.id AND msg.channel_id <> @channel))`,
    ),
    builtOn: preparedOnUse<[], { id: number; source_ids: string }>(
      database,
      "SELECT id, source_ids FROM memories WHERE source_ids <> '[]'",
    ),
    // Each memory asked and a channel it cites, itself or through the memories it was built on at any depth (one
    // recursive statement: session 18, where every memory built on others was read at each audience change).
    channelsOf: preparedOnUse<[string], { memoryId: number; channelId: string }>(
      database,
      `WITH RECURSIVE reach(start, id) AS (
          SELECT value, value FROM json_each(?)
          UNION
          SELECT reach.start, source.value FROM reach JOIN memories m ON m.id = reach.id, json_each(m.source_ids) AS source
        )
        SELECT DISTINCT reach.start AS memoryId, msg.channel_id AS channelId FROM reach
          JOIN memory_source_messages s ON s.memory_id = reach.id JOIN messages msg ON msg.id = s.message_id`,
    ),
    history: database.prepare<[number, number, number], VersionRow>(
      'SELECT * FROM memory_versions WHERE memory_id = ? AND version > ? ORDER BY version LIMIT ?',
    ),
    restore: preparedOnUse<[number, string | null, number], MemoryRow>(
      database,
      'UPDATE memories SET archived_at = NULL, faded_at = NULL, updated_at = ?, embedding_model = ? WHERE id = ? RETURNING *',
    ),
    // A restored memory supersedes again what its `supersedes` links name, when still current.
    resupersede: database.prepare<[number, number]>(
      `UPDATE memories SET superseded_by = ? WHERE archived_at IS NULL AND superseded_by IS NULL
        AND id IN (SELECT target_id FROM memory_links WHERE source_id = ? AND type = 'supersedes')`,
    ),
    // Every faded memory is in the owner index (its condition holds for it), keyed by id first: a probe of
    // that small index, mostly cached, instead of each memory's row in the table.
    fadedAmong: preparedOnUse<[string], { id: number }>(
      database,
      `SELECT id FROM memories INDEXED BY memories_searchable_owner
        WHERE faded_at IS NOT NULL AND id IN (SELECT value FROM json_each(?))`,
    ),
    touch: database.prepare<{ at: number; touches: string }>(`UPDATE memories SET
        access_count = access_count + 1,
        last_accessed = @at,
        ${reinforced('strength')}, ${reinforced('salience')}, ${reinforced('importance')}
      FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.strength') AS strength,
          json_extract(value, '$.salience') AS salience, json_extract(value, '$.importance') AS importance,
          json_extract(value, '$.read.strength') AS read_strength,
          json_extract(value, '$.read.salience') AS read_salience,
          json_extract(value, '$.read.importance') AS read_importance
        FROM json_each(@touches)) AS touched
      WHERE memories.id = touched.id AND memories.archived_at IS NULL`),
    recentlyAccessed: database.prepare<{ owners: string | null; limit: number }, MemoryRow>(`SELECT * FROM memories
      WHERE archived_at IS NULL AND (@owners IS NULL OR owner IN (SELECT value FROM json_each(@owners)))
      ORDER BY COALESCE(last_accessed, created_at) DESC, id DESC
      LIMIT @limit`),
    // A user's order (ADR 52): the retrievals of its own memories only.
    recentlyAccessedBy: database.prepare<{ owners: string | null; limit: number; own: string }, MemoryRow>(`SELECT *
      FROM memories
      WHERE archived_at IS NULL AND (@owners IS NULL OR owner IN (SELECT value FROM json_each(@owners)))
      ORDER BY COALESCE(CASE WHEN owner = @own THEN last_accessed END, created_at) DESC, id DESC
      LIMIT @limit`),
  };
  const frequencies = createSqliteTermFrequencies(database);
  const ownerWords = createSqliteOwnerWords(database);
  const ranking = createSqliteVisibleRanking(
    database,
    ownerWords,
    options.textSnapshotAfter === undefined ? {} : { snapshotAfter: options.textSnapshotAfter },
  );
  const textSearches = new Map<string, Database.Statement<unknown[], { id: number; rank: number }>>();

  /**
   * The full-text search among active memories (and faded ones with `includeFaded`) of every owner, by
   * FTS5's `bm25()` (statistics of the whole index: only for a search of every owner's memories; a
   * search of some owners' is ranked by `createSqliteVisibleRanking`). `split`: the very common terms only score the memories that the rarer terms match
   * (one FTS5 query over the rarer terms, one over `common AND rare` whose BM25 is the whole query's for
   * the memories it matches, as BM25 sums over the query's terms), so their posting lists are not scored
   * whole.
   */
  function textSearchStatement(split: boolean, includeFaded: boolean) {
    const key = `${split}:${includeFaded}`;
    let statement = textSearches.get(key);
    if (!statement) {
      // The partial index holds the searchable memories: active, and faded (ADR 9); faded_at tells them apart.
      const searchable = '(m.archived_at IS NULL OR m.faded_at IS NOT NULL)';
      const state = includeFaded ? searchable : `${searchable} AND m.faded_at IS NULL`;
      statement = database.prepare<unknown[], { id: number; rank: number }>(
        split
          ? `WITH by_rare AS (
              SELECT rowid AS id, bm25(memories_fts, 1.0, 1.0) AS rank FROM memories_fts WHERE memories_fts MATCH ?
            ),
            with_common AS MATERIALIZED (
              SELECT rowid AS id, bm25(memories_fts, 1.0, 1.0) AS rank FROM memories_fts WHERE memories_fts MATCH ?
            )
            SELECT m.id AS id, COALESCE(with_common.rank, by_rare.rank) AS rank
            FROM by_rare LEFT JOIN with_common ON with_common.id = by_rare.id
            JOIN memories m INDEXED BY memories_searchable_owner ON m.id = by_rare.id
            WHERE ${state}
            ORDER BY rank LIMIT ?`
          : `SELECT m.id AS id, bm25(memories_fts, 1.0, 1.0) AS rank
            FROM memories_fts JOIN memories m INDEXED BY memories_searchable_owner ON m.id = memories_fts.rowid
            WHERE memories_fts MATCH ? AND ${state}
            ORDER BY rank LIMIT ?`,
      );
      textSearches.set(key, statement);
    }
    return statement;
  }

  /** Archived memories have no vector but faded ones keep theirs: a search without includeFaded drops those. */
  function withoutFaded(hits: SearchHit[]): SearchHit[] {
    if (hits.length === 0) return hits;
    const faded = new Set(
      statements
        .fadedAmong()
        .all(JSON.stringify(hits.map((hit) => hit.id)))
        .map((row) => row.id),
    );
    return faded.size === 0 ? hits : hits.filter((hit) => !faded.has(hit.id));
  }

  return {
    async insert(memories, context, options = {}) {
      return writeSqlite(
        database,
        'storing memories',
        () => {
          if (options.sourcesMustExist) {
            for (const memory of memories) {
              const messages = missing(statements.messagesAmong, memory.sourceMessageIds);
              const sources = missing(statements.memoriesAmong, memory.sourceIds);
              if (messages.length + sources.length > 0) throw sourcesGone(memory, messages, sources);
              const moved = elsewhere(statements.memoriesAmong, memory.sourceIds, memory.owner);
              if (moved.length > 0) throw sourcesMoved(memory, moved);
              const forgotten = statements
                .memoriesAmong()
                .all(JSON.stringify(memory.sourceIds))
                .filter((row) => row.forgotten === 1)
                .map((row) => row.id)
                .sort((a, b) => a - b);
              if (forgotten.length > 0) throw sourcesForgotten(memory, forgotten);
            }
          }
          const stored = memories.map((memory) => toMemory(writes.insert(memory, context)));
          if (options.state) writeState(options.state.channelId, options.state.task, options.state.changes);
          return stored;
        },
        context,
      );
    },

    async citedChannels(query) {
      return readSqlite('reading the channels memories cite', () =>
        readInTransaction(database, () => {
          // The memories built on those citing the channel are found among every memory built on others.
          const ids =
            'channelId' in query
              ? withBuiltOnThem(
                  statements
                    .citingChannel()
                    .all(query.channelId)
                    .map((row) => row.id),
                  new Map(
                    statements
                      .builtOn()
                      .all()
                      .map((row) => [row.id, JSON.parse(row.source_ids) as number[]] as const),
                  ),
                )
              : statements
                  .ofOwner()
                  .all({ owner: query.owner, channel: roomChannel(query.owner) })
                  .map((row) => row.id);
          const rows = statements
            .byIds()
            .raw()
            .all(JSON.stringify(ids))
            .map((values) => memoryRowOf(values))
            .filter(
              (row) =>
                !('channelId' in query) ||
                (row.owner !== `room:${query.channelId}` && !row.owner.startsWith(ownerPrefix.personal)),
            )
            .sort((a, b) => a.id - b.id);
          const asked = rows.map((row) => row.id);
          const channels = channelsByMemory(asked, statements.channelsOf().all(JSON.stringify(asked)));
          return rows.map((row) => ({ memory: toMemory(row), channelIds: channels.get(row.id) ?? [] }));
        }),
      );
    },

    async moveTo(id, target, context) {
      return writeSqlite(database, `moving memory ${id}`, () => toMemory(writes.moveTo(id, target, context)), context);
    },

    async update(id, changes, context) {
      return writeSqlite(
        database,
        `updating memory ${id}`,
        () => toMemory(writes.update(id, changes, context)),
        context,
      );
    },

    async archive(ids, context, options = {}) {
      return writeSqlite(database, 'archiving memories', () =>
        ids.map((id) => toMemory(writes.archive(id, context, options.fade === true))),
      );
    },

    async restore(id, embedding, context) {
      return writeSqlite(database, `restoring memory ${id}`, () => {
        const before = writes.read(id);
        assertStillVisible(before.owner, id, context);
        if (before.archived_at === null) throw new MnemeError(ErrorCode.Conflict, `memory ${id} is not archived`);
        // A faded memory kept its vector: it stays unless a new one is given.
        const kept = before.faded_at === null ? null : before.embedding_model;
        const held = vectors.held(embedding);
        const after = getRow(statements.restore(), context.at, held?.model ?? kept, id);
        if (held) vectors.put(id, after.owner, held);
        if (after.superseded_by === null) statements.resupersede.run(id, id);
        writes.recordVersion(after, 'restore', { archivedAt: { from: toIso(before.archived_at), to: null } }, context);
        return toMemory(after);
      });
    },

    async get(ids) {
      if (ids.length === 0) return [];
      return readSqlite('reading memories', () => {
        const rows = statements.byIds().raw().all(JSON.stringify(ids)).map(memoryRowOf);
        const byId = new Map(rows.map((row) => [row.id, row]));
        return ids.flatMap((id) => {
          const row = byId.get(id);
          return row ? [toMemory(row)] : [];
        });
      });
    },

    async decayedAt(ids) {
      if (ids.length === 0) return new Map();
      return readSqlite('reading decay times', () => {
        const rows = database
          .prepare<number[], { id: number; decayed_at: number }>(
            `SELECT id, decayed_at FROM memories WHERE decayed_at IS NOT NULL AND id IN (${placeholders(ids.length)})`,
          )
          .all(...ids);
        return new Map(rows.map((row) => [row.id, row.decayed_at]));
      });
    },

    async list(filter) {
      return readSqlite('listing memories', () => {
        const { where, values } = listConditions(filter);
        const { total } = getRow(
          database.prepare<Record<string, unknown>, { total: number }>(
            `SELECT COUNT(*) AS total FROM memories ${where}`,
          ),
          values,
        );
        const rows = database
          .prepare<Record<string, unknown>, MemoryRow>(
            `SELECT * FROM memories ${where} ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`,
          )
          .all({ ...values, limit: filter.limit, offset: filter.offset });
        return { memories: rows.map(toMemory), total, limit: filter.limit, offset: filter.offset };
      });
    },

    async history(id, page = {}) {
      return readSqlite(`reading the history of memory ${id}`, () => {
        writes.read(id);
        // LIMIT -1: every version.
        return statements.history.all(id, page.after ?? 0, page.limit ?? -1).map(toVersion);
      });
    },

    async searchText({ terms, owners, limit, includeFaded = false, maxTerms, postingsAtMost }) {
      if (owners !== null && owners.length === 0) return [];
      return readSqlite('searching memories', () => {
        // Which terms are rarest or very common is decided among the memories searched (ADR 25), and
        // the ranking weighs them by the same counts: read once, for every term. A caller that counted
        // the terms just before (`postingsAtMost`) is answered with the counts it was given then.
        const counted =
          owners === null
            ? undefined
            : ((postingsAtMost === undefined ? null : ownerWords.countedBefore(terms, owners)) ??
              ownerWords.counts(terms, owners));
        // No memory of the owners holds any of the words (the counts are exact: ADR 25; a phrase counts as its
        // rarest word, a term without a word 0): no statement can match, so none is run.
        if (counted?.counts.every((count) => count === 0)) return [];
        const visible = (asked: readonly string[]) => counted && countsOf(counted, terms, asked);
        const searched =
          maxTerms === undefined || terms.length <= maxTerms
            ? terms
            : frequencies.rarest(terms, maxTerms, counted?.counts);
        // Terms the caller just counted under the very-common bound are all rare: nothing to look up.
        const { rare, common } =
          postingsAtMost !== undefined && postingsAtMost <= COMMON_MIN_MEMORIES
            ? { rare: searched, common: [] }
            : frequencies.split(searched, limit, searched.length < 2 ? undefined : visible(searched));
        if (owners !== null) {
          return ranking.search({
            rare,
            common,
            owners,
            limit,
            includeFaded,
            visible: visible([...rare, ...common]),
            snapshot: maxTerms === undefined,
          });
        }
        const rareQuery = ftsQuery(rare);
        const commonQuery = ftsQuery(common);
        if (rareQuery === null) return [];
        const matches = commonQuery === null ? [rareQuery] : [rareQuery, `(${commonQuery}) AND (${rareQuery})`];
        return textSearchStatement(commonQuery !== null, includeFaded)
          .all(...matches, limit)
          .map((row) => ({ id: row.id, score: -row.rank }));
      });
    },

    async termCounts(terms, { owners, exactUpTo }) {
      return readSqlite('counting search terms', () => {
        if (owners === null) {
          return exactUpTo === undefined ? frequencies.counts(terms) : frequencies.exactCounts(terms, exactUpTo);
        }
        const { memories, counts } = ownerWords.counts(terms, owners);
        const upTo = exactUpTo === undefined ? Number.POSITIVE_INFINITY : Math.max(0, Math.floor(exactUpTo)) + 1;
        return { memories, counts: counts.map((count) => Math.min(count, upTo)) };
      });
    },

    async searchVector({ vector, model, owners, limit, includeFaded = false, minScore }) {
      return readSqlite('searching memory vectors', () => {
        const hits =
          minScore === undefined
            ? vectors.search(vector, model, owners, limit)
            : vectors.searchNear(vector, model, owners, limit, minScore);
        return includeFaded ? hits : withoutFaded(hits);
      });
    },

    async searchOlderNeighbours(searches) {
      return readSqlite('searching memory vectors', () => {
        // One call per (model, limit, minScore, includeFaded): linking's searches all share them.
        const answers: SearchHit[][] = searches.map(() => []);
        const groups = new Map<string, number[]>();
        for (const [index, search] of searches.entries()) {
          const key = JSON.stringify([search.model, search.limit, search.minScore, search.includeFaded ?? false]);
          // Appended where it is: a copy of the group at each search was 1 + 2 + ... + 500 indexes a page of linking
          // (about a quarter of the JavaScript heap linking's first pass allocated, 2026-12-03, session 18).
          const group = groups.get(key);
          if (group) group.push(index);
          else groups.set(key, [index]);
        }
        for (const indexes of groups.values()) {
          const first = searches[indexes[0] ?? 0];
          if (!first) continue;
          const found = vectors.searchNearOlder(
            indexes.flatMap((index) => searches[index] ?? []),
            first.model,
            first.limit,
            first.minScore,
          );
          for (const [at, index] of indexes.entries()) {
            const hits = found[at] ?? [];
            answers[index] = first.includeFaded ? hits : withoutFaded(hits);
          }
        }
        return answers;
      });
    },

    async touch(touches, at) {
      if (touches.length === 0) return;
      // Access statistics are not data a power cut must not lose: no fsync of their own.
      writeSqlite(
        database,
        'recording retrievals',
        () => {
          // The active memories first (nearly always all of them: one statement). A touched memory it
          // left alone is archived: if it faded, it is brought back, then touched like the others.
          // It changes no memory's owner, state or length (active memories only): the full-text leg's
          // audience snapshot stays valid through it (ADR 25, 2026-12-02, session 10); a revival does not.
          const touched = ranking.unchangedBy(() =>
            statements.touch.run({ at, touches: JSON.stringify(touches) }),
          ).changes;
          const ids = new Set(touches.map((touch) => touch.id));
          if (touched >= ids.size) return;
          const revived = new Set<number>();
          for (const { id } of statements.fadedAmong().all(JSON.stringify([...ids]))) {
            writes.revive(id, { at, actor: null, reason: 'recalled after it faded' });
            revived.add(id);
          }
          if (revived.size === 0) return;
          statements.touch.run({ at, touches: JSON.stringify(touches.filter((touch) => revived.has(touch.id))) });
        },
        { deferred: true },
      );
    },

    async recentlyAccessed(owners, limit, own = null) {
      if (limit <= 0 || (owners !== null && owners.length === 0)) return [];
      const shown = { owners: owners === null ? null : JSON.stringify(owners), limit };
      return readSqlite('reading recently accessed memories', () =>
        (own === null
          ? statements.recentlyAccessed.all(shown)
          : statements.recentlyAccessedBy.all({ ...shown, own })
        ).map(toMemory),
      );
    },

    async stats(now) {
      return readSqlite('counting memories', () => readSqliteMemoryStats(database, now));
    },

    async purgeUser(userId) {
      return eraseSqliteUser(database, vectors, userId);
    },
  };
}

function listConditions(filter: MemoryListQuery): { where: string; values: Record<string, unknown> } {
  const conditions: string[] = [];
  const values: Record<string, unknown> = {};
  const equal = (column: string, key: string, value: unknown) => {
    if (value === undefined) return;
    conditions.push(`${column} = @${key}`);
    values[key] = value;
  };
  equal('scope', 'scope', filter.scope);
  equal('user_id', 'userId', filter.userId);
  equal('channel_id', 'channelId', filter.channelId);
  equal('project_id', 'projectId', filter.projectId);
  equal('topic_id', 'topicId', filter.topicId);
  equal('category', 'category', filter.category);
  if (filter.owners !== null) {
    const keys = filter.owners.map((_, index) => `owner${index}`);
    conditions.push(keys.length ? `owner IN (${keys.map((key) => `@${key}`).join(', ')})` : '0');
    filter.owners.forEach((owner, index) => {
      values[`owner${index}`] = owner;
    });
  }
  if (filter.archived === 'exclude') conditions.push('archived_at IS NULL');
  if (filter.archived === 'only') conditions.push('archived_at IS NOT NULL');
  return { where: conditions.length ? `WHERE ${conditions.join(' AND ')}` : '', values };
}

/** The ids of `ids` the statement (ids among a JSON list) does not find: deleted by a purge. */
function missing(statement: () => Database.Statement<[string], { id: number }>, ids: readonly number[]): number[] {
  if (ids.length === 0) return [];
  const found = new Set(
    statement()
      .all(JSON.stringify(ids))
      .map((row) => row.id),
  );
  return [...new Set(ids)].filter((id) => !found.has(id));
}

/** Those of memories `ids` whose owner is not `owner`, sorted. */
function elsewhere(
  statement: () => Database.Statement<[string], { id: number; owner: string }>,
  ids: readonly number[],
  owner: string,
): number[] {
  if (ids.length === 0) return [];
  return statement()
    .all(JSON.stringify(ids))
    .filter((row) => row.owner !== owner)
    .map((row) => row.id)
    .sort((a, b) => a - b);
}

/** The counts of `asked` (each one of `terms`) out of `counted`, the counts of `terms`. */
function countsOf(counted: VisibleCounts, terms: readonly string[], asked: readonly string[]): VisibleCounts {
  const byTerm = new Map(terms.map((term, index) => [term, counted.counts[index] ?? 0]));
  return { memories: counted.memories, tokens: counted.tokens, counts: asked.map((term) => byTerm.get(term) ?? 0) };
}
