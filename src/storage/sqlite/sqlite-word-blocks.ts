import type Database from 'better-sqlite3';
import type { MemoryWords, WordBlock, WordBlockStore } from '../maintenance-store.js';
import { readSqlite, writeSqlite } from './sqlite-database.js';
import { WORD_BLOCKS_GENERATION } from './sqlite-migrations.js';

interface BlockRow {
  first_id: number;
  last_id: number;
  owners: string;
  words: Buffer;
}

/**
 * Consolidation's word blocks in SQLite (migration 21): a block's memories as one blob of 32-bit
 * integers, `[count, ids…, owner numbers…, starts… (count + 1), word ids…]` in the machine's byte order
 * (little-endian everywhere Node runs), its owner keys as a JSON array; a block of ids above 2^31 - 1 is
 * not stored. The vocabulary's ids come from AUTOINCREMENT, given again from 1 only after a purge
 * emptied it and moved the generation on.
 */
export function createSqliteWordBlocks(database: Database.Database): WordBlockStore {
  // Prepared on first use: a store opened at an older schema (tests) has no such tables.
  const prepare = () => ({
    generation: database
      .prepare<[], number>(
        `SELECT IFNULL((SELECT value FROM service_state WHERE name = '${WORD_BLOCKS_GENERATION}'), 0)`,
      )
      .pluck(),
    blocks: database.prepare<[], BlockRow>(
      'SELECT first_id, last_id, owners, words FROM consolidation_word_blocks ORDER BY first_id',
    ),
    maxWordId: database.prepare<[], number>('SELECT IFNULL(MAX(id), 0) FROM consolidation_words').pluck(),
    wordId: database.prepare<[string], number>('SELECT id FROM consolidation_words WHERE word = ?').pluck(),
    addWord: database
      .prepare<[string], number>(
        'INSERT INTO consolidation_words (word) VALUES (?) ON CONFLICT (word) DO UPDATE SET word = excluded.word RETURNING id',
      )
      .pluck(),
    writeBlock: database.prepare<[number, number, string, Buffer]>(
      `INSERT INTO consolidation_word_blocks (first_id, last_id, owners, words) VALUES (?, ?, ?, ?)
      ON CONFLICT (first_id) DO UPDATE SET last_id = excluded.last_id, owners = excluded.owners, words = excluded.words`,
    ),
  });
  let prepared: ReturnType<typeof prepare> | null = null;
  const statements = () => {
    prepared ??= prepare();
    return prepared;
  };
  const readAll = () =>
    database.transaction(() => ({
      rows: statements().blocks.all(),
      maxWordId: statements().maxWordId.get() ?? 0,
    }))();
  /**
   * Word ids this connection read or wrote, while the generation is `known.generation`: only a purge takes
   * a word's id away, and it moves the generation on.
   */
  const known = { generation: -1, ids: new Map<string, number>() };
  /** Word ids the transaction under way read or added. */
  const learnt = new Map<string, number>();
  const write = (firstId: number, lastId: number, memories: readonly MemoryWords[], generation: number): boolean => {
    if ((statements().generation.get() ?? 0) !== generation) return false;
    // Ids read or added here join `known` only once the transaction has committed (see `write` below).
    const cached = known.generation === generation ? known.ids : new Map<string, number>();
    const owners = new Map<string, number>();
    let total = 0;
    for (const memory of memories) total += memory.words.length;
    const count = memories.length;
    const values = new Int32Array(1 + 3 * count + 1 + total);
    values[0] = count;
    let at = 2 + 3 * count;
    memories.forEach((memory, index) => {
      let owner = owners.get(memory.owner);
      if (owner === undefined) {
        owner = owners.size;
        owners.set(memory.owner, owner);
      }
      values[1 + index] = memory.id;
      values[1 + count + index] = owner;
      values[1 + 2 * count + index] = at - (2 + 3 * count);
      for (const word of memory.words) {
        let id = cached.get(word) ?? learnt.get(word);
        if (id === undefined) {
          id = statements().wordId.get(word) ?? statements().addWord.get(word) ?? 0;
          learnt.set(word, id);
        }
        values[at++] = id;
      }
    });
    values[1 + 3 * count] = at - (2 + 3 * count);
    statements().writeBlock.run(
      firstId,
      lastId,
      JSON.stringify([...owners.keys()]),
      Buffer.from(values.buffer, values.byteOffset, values.byteLength),
    );
    return true;
  };

  return {
    async generation() {
      return readSqlite('reading the word blocks', () => statements().generation.get() ?? 0);
    },

    async read() {
      const { rows, maxWordId } = readSqlite('reading the word blocks', readAll);
      return { blocks: rows.map(toWordBlock), maxWordId };
    },

    async wordIds(words, generation) {
      return readSqlite('reading the word blocks', () => {
        const found = new Map<string, number>();
        if ((statements().generation.get() ?? 0) !== generation) return found;
        for (const word of words) {
          const id = statements().wordId.get(word);
          if (id !== undefined) found.set(word, id);
        }
        return found;
      });
    },

    async write(firstId, lastId, memories, generation) {
      learnt.clear();
      // Data that can be rebuilt: committed without an fsync of its own (see `writeSqlite`).
      const written = writeSqlite(
        database,
        'writing a word block',
        () => write(firstId, lastId, memories, generation),
        {
          deferred: true,
        },
      );
      if (written) {
        if (known.generation !== generation) known.ids.clear();
        known.generation = generation;
        for (const [word, id] of learnt) known.ids.set(word, id);
      }
      learnt.clear();
      return written;
    },
  };
}

function toWordBlock(row: BlockRow): WordBlock {
  // A copy: the blob's bytes need not sit at a multiple of 4.
  const values = new Int32Array(new Uint8Array(row.words).buffer);
  const count = values[0] ?? 0;
  return {
    firstId: row.first_id,
    lastId: row.last_id,
    ids: values.subarray(1, 1 + count),
    owners: JSON.parse(row.owners) as string[],
    ownerOf: values.subarray(1 + count, 1 + 2 * count),
    starts: values.subarray(1 + 2 * count, 2 + 3 * count),
    words: values.subarray(2 + 3 * count),
  };
}
