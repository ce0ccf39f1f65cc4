import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import { DUE_MARGIN_MS, decayDueExpression, stillAsRead, toDecayCandidate } from '../decay-due-sql.js';
import {
  assertAsRead,
  assertOfOwner,
  type DecayCursor,
  type DecayDueRule,
  type DueDecayCandidate,
  type ImportanceChange,
  type MaintenanceStore,
  type MemoryText,
} from '../maintenance-store.js';
import { getRow, readSqlite, writeSqlite } from './sqlite-database.js';
import { type MemoryRow, toMemory } from './sqlite-memory-rows.js';
import { createSqliteMemoryWrites } from './sqlite-memory-writes.js';
import type { SqliteVectorIndex } from './sqlite-vector-index.js';
import { createSqliteWordBlocks } from './sqlite-word-blocks.js';

type DecayRow = Pick<
  MemoryRow,
  'id' | 'strength' | 'salience' | 'importance' | 'last_accessed' | 'created_at' | 'decayed_at'
>;

/**
 * FTS5 writes each transaction's terms as a new segment and merges segments a few at a time
 * (`automerge`), so an index written a memory at a time, or a batch at a time, keeps 5 to 20 of them;
 * a full-text search looks each term up in every segment. Past this many, `compactTextIndex` merges
 * them into one, a bounded step a call (FTS5's `merge` over every level, as `optimize` does at once).
 */
export const TEXT_INDEX_SEGMENTS = 4;
/** Pages (of 4 KiB) one step of a compaction writes, about: 100,000 memories take 3 or 4 steps of tens of milliseconds. */
const TEXT_INDEX_MERGE_PAGES = 500;

/** The prefix of the name of the index on a decay rule's due time (one at a time: the last rule read by). */
export const DECAY_DUE_INDEX_PREFIX = 'memories_decay_due_';

/**
 * Reads the memories due under a decay rule through a partial index on the rule's due time (ADR 9,
 * session 8): an index on an expression of the stored columns, so every write that changes them
 * (insert, touch, edit, restore, forget, import, a copy) moves a memory's due time with no code of its
 * own. The index is named after the expression: a rule with other numbers (another preset, a changed
 * half-life) builds its own index on its first decay run (`indexDecayDue`; a read alone builds nothing and scans), which drops the other's; building it is the
 * backfill of a store.
 */
function createDecayDueReads(database: Database.Database) {
  type DueStatement = Database.Statement<[number, number, number, number], DecayRow & { due: number }>;
  const prepared = new Map<string, DueStatement>();
  const indexes = database
    .prepare<[], string>(
      `SELECT name FROM sqlite_master WHERE type = 'index' AND substr(name, 1, ${DECAY_DUE_INDEX_PREFIX.length}) = '${DECAY_DUE_INDEX_PREFIX}'`,
    )
    .pluck();
  const nameOf = (expression: string) =>
    `${DECAY_DUE_INDEX_PREFIX}${createHash('sha256').update(expression).digest('hex').slice(0, 12)}`;
  return {
    /**
     * Builds the index of `rule`'s due times (dropping another rule's) when it is not there: a write, so
     * only decay's run asks for it, never a read such as `stats` (which may run beside another writer, or
     * on a read-only file).
     */
    index(rule: DecayDueRule): void {
      const name = nameOf(decayDueExpression(rule, 'max'));
      const present = readSqlite('reading the indexes of decay due times', () => indexes.all());
      if (present.length === 1 && present[0] === name) return;
      writeSqlite(database, 'building the index of decay due times', () => {
        for (const other of indexes.all()) {
          if (other !== name) database.exec(`DROP INDEX "${other}"`);
        }
        database.exec(
          `CREATE INDEX IF NOT EXISTS "${name}" ON memories(${decayDueExpression(rule, 'max')}, id) WHERE archived_at IS NULL AND pinned = 0`,
        );
      });
      prepared.clear();
    },
    /** The read of `rule`'s due memories: through its index when built, else over every active memory. */
    read(rule: DecayDueRule): DueStatement {
      const expression = decayDueExpression(rule, 'max');
      const name = nameOf(expression);
      const indexed = readSqlite('reading the indexes of decay due times', () => indexes.all()).includes(name);
      const key = `${indexed ? 'indexed' : 'scan'} ${expression}`;
      let statement = prepared.get(key);
      if (statement) return statement;
      statement = database.prepare(
        `SELECT id, strength, salience, importance, last_accessed, created_at, decayed_at, ${expression} AS due
        FROM memories${indexed ? ` INDEXED BY "${name}"` : ''}
        WHERE archived_at IS NULL AND pinned = 0 AND ${expression} <= ? AND (${expression}, id) > (?, ?)
        ORDER BY ${expression}, id LIMIT ?`,
      );
      prepared.set(key, statement);
      return statement;
    },
  };
}

/** The SQLite implementation of the MaintenanceStore port. */
export function createSqliteMaintenanceStore(
  database: Database.Database,
  vectors: SqliteVectorIndex,
): MaintenanceStore {
  const writes = createSqliteMemoryWrites(database, vectors);
  /** True while a compaction is under way (its steps go on until one merges nothing). */
  let compacting = false;
  const decayDue = createDecayDueReads(database);
  const statements = {
    decayCandidates: database.prepare<[number, number], DecayRow>(
      `SELECT id, strength, salience, importance, last_accessed, created_at, decayed_at
      FROM memories WHERE archived_at IS NULL AND pinned = 0 AND id > ? ORDER BY id LIMIT ?`,
    ),
    importance: database.prepare<ImportanceChange & { at: number }, MemoryRow>(
      'UPDATE memories SET importance = @importance, decayed_at = @decayedAt, updated_at = @at WHERE id = @id AND archived_at IS NULL RETURNING *',
    ),
    decayedAt: database.prepare<Pick<ImportanceChange, 'id' | 'decayedAt'>>(
      'UPDATE memories SET decayed_at = @decayedAt WHERE id = @id AND archived_at IS NULL',
    ),
    byId: database.prepare<[number], MemoryRow>('SELECT * FROM memories WHERE id = ?'),
    listAfter: database.prepare<[number, number], MemoryRow>(
      'SELECT * FROM memories WHERE archived_at IS NULL AND id > ? ORDER BY id LIMIT ?',
    ),
    textsAfter: database.prepare<[number, number], MemoryText>(
      'SELECT id, owner, content FROM memories WHERE archived_at IS NULL AND id > ? ORDER BY id LIMIT ?',
    ),
    mergeableTextsAfter: database.prepare<[number, number], MemoryText>(
      `SELECT id, owner, content FROM memories
      WHERE archived_at IS NULL AND pinned = 0 AND superseded_by IS NULL AND category NOT IN ('episode', 'exchange')
        AND id > ? ORDER BY id LIMIT ?`,
    ),
    recentWithVectors: database.prepare<[string, number], MemoryRow>(
      `SELECT * FROM memories WHERE archived_at IS NULL AND embedding_model = ?
      ORDER BY created_at DESC, id DESC LIMIT ?`,
    ),
    latestMemoryId: database.prepare<[], { id: number }>('SELECT COALESCE(MAX(id), 0) AS id FROM memories'),
    // FTS5's own table of its segments' b-tree pages, one row per page a term starts: a few thousand rows.
    textIndexSegments: database.prepare<[], number>('SELECT count(DISTINCT segid) FROM memories_fts_idx').pluck(),
    totalChanges: database.prepare<[], number>('SELECT total_changes()').pluck(),
    mergeStep: database.prepare(
      `INSERT INTO memories_fts(memories_fts, rank) VALUES ('merge', -${TEXT_INDEX_MERGE_PAGES})`,
    ),
    link: database.prepare<[number, number, number]>(
      `INSERT INTO memory_links (source_id, target_id, type, strength, created_at)
      VALUES (?, ?, 'consolidated', 1, ?) ON CONFLICT (source_id, target_id, type) DO NOTHING`,
    ),
    supersedesLink: database.prepare<[number, number, number]>(
      `INSERT INTO memory_links (source_id, target_id, type, strength, created_at)
      VALUES (?, ?, 'supersedes', 1, ?) ON CONFLICT (source_id, target_id, type) DO NOTHING`,
    ),
  };

  return {
    wordBlocks: createSqliteWordBlocks(database),

    async decayCandidates(afterId, limit) {
      return readSqlite('reading memories to decay', () =>
        statements.decayCandidates.all(afterId, limit).map(toDecayCandidate),
      );
    },

    async indexDecayDue(rule) {
      decayDue.index(rule);
    },

    async dueForDecay(rule, until, after: DecayCursor | null, limit) {
      const statement = decayDue.read(rule);
      return readSqlite('reading memories due to decay', () =>
        statement
          .all(until + DUE_MARGIN_MS, after?.due ?? -Number.MAX_VALUE, after?.id ?? 0, limit)
          .map((row): DueDecayCandidate => ({ ...toDecayCandidate(row), due: row.due })),
      );
    },

    async applyImportanceChanges(changes, context) {
      if (changes.length === 0) return [];
      return writeSqlite(database, 'storing importance downgrades', () => {
        const changed: number[] = [];
        for (const change of changes) {
          const before = statements.byId.get(change.id);
          // Not over a retrieval, an edit or a pin that landed after decay read the memory (attack 31c).
          if (!before || !stillAsRead(before, change.read)) continue;
          if (before.importance === change.importance) {
            statements.decayedAt.run({ id: change.id, decayedAt: change.decayedAt });
            changed.push(change.id);
            continue;
          }
          const after = getRow(statements.importance, { ...change, at: context.at });
          writes.recordVersion(
            after,
            'update',
            { importance: { from: before.importance, to: after.importance } },
            context,
          );
          changed.push(change.id);
        }
        return changed;
      });
    },

    async putToRest(read, context) {
      if (read.length === 0) return [];
      return writeSqlite(database, 'putting memories to rest', () => {
        const archived: number[] = [];
        for (const memory of read) {
          const before = statements.byId.get(memory.id);
          if (!before || !stillAsRead(before, memory)) continue;
          writes.archive(memory.id, context, true);
          archived.push(memory.id);
        }
        return archived;
      });
    },

    async listAfter(afterId, limit) {
      return readSqlite('reading memories', () => statements.listAfter.all(afterId, limit).map(toMemory));
    },

    async textsAfter(afterId, limit) {
      return readSqlite('reading memory texts', () => statements.textsAfter.all(afterId, limit));
    },

    async mergeableTextsAfter(afterId, limit) {
      return readSqlite('reading memory texts', () => statements.mergeableTextsAfter.all(afterId, limit));
    },

    async recentWithVectors(model, limit) {
      return readSqlite('reading recent memories', () => statements.recentWithVectors.all(model, limit).map(toMemory));
    },

    async vectors(ids, model, into) {
      if (ids.length === 0 || vectors.info()?.model !== model) return new Map<number, Float32Array>();
      return readSqlite('reading memory vectors', () => vectors.vectors(ids, into));
    },

    async compactTextIndex() {
      return writeSqlite(
        database,
        'compacting the full-text index',
        () => {
          const segments = statements.textIndexSegments.get() ?? 0;
          if (segments <= 1 || (!compacting && segments <= TEXT_INDEX_SEGMENTS)) {
            compacting = false;
            return false;
          }
          // One bounded step of FTS5's merge of every segment into one (a negative page count: all
          // levels, as `optimize` does); it did work when it changed two rows or more.
          const before = statements.totalChanges.get() ?? 0;
          statements.mergeStep.run();
          compacting = (statements.totalChanges.get() ?? 0) - before >= 2;
          return compacting;
        },
        // The index can be rebuilt from the memories: no fsync of its own.
        { deferred: true },
      );
    },

    async indexStep() {
      return writeSqlite(database, 'building the vector lists', () => vectors.indexStep());
    },

    async latestMemoryId() {
      return readSqlite('reading the latest memory id', () => getRow(statements.latestMemoryId).id);
    },

    async merge(merged, originalIds, context, read = []) {
      return writeSqlite(database, 'merging memories', () => {
        const sources = originalIds.map((id) => `#${id}`).join(', ');
        const row = writes.insert(merged, { ...context, reason: context.reason ?? `merged from ${sources}` }, 'merge');
        // Of its owner still (an audience change moves memories out of their owner, ADR 5), and as the caller read
        // it (attack 31c): refused, all rolled back.
        for (const id of originalIds) {
          const original = writes.read(id);
          assertOfOwner(original.owner, id, merged.owner);
          assertAsRead(original, read);
        }
        for (const id of writes.transferSupersession(originalIds, row.id)) {
          statements.supersedesLink.run(row.id, id, context.at);
        }
        const archived = originalIds.map((id) => {
          const after = writes.archive(id, { ...context, reason: `merged into #${row.id}` });
          statements.link.run(row.id, id, context.at);
          return toMemory(after);
        });
        return { merged: toMemory(row), archived };
      });
    },
  };
}
