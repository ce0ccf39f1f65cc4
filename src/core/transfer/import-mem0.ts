import { z } from 'zod';
import type { ImportedMemory, ImportSession } from '../../storage/transfer-store.js';
import type { EngineContext } from '../engine-context.js';
import { ErrorCode, MnemeError } from '../errors.js';
import { MEM0_ACTOR } from '../reserved-ids.js';
import { CategorySchema, ContentSchema, PersonIdSchema, parseInput, timeSchema } from '../schemas.js';
import { ownerKey, sectorOf } from '../scope.js';
import { emptyReport, type ImportReport, lineError, type NumberedLine, numberedLines } from './import-lines.js';

/** Memories written per batch of the import's transaction. */
const BATCH = 500;

/**
 * One memory of a mem0 export (docs/export-format.md, "mem0"): the items of the platform API's
 * `get_all` (v1.1 output) and of the open-source `Memory.get_all()` (`{ "results": [...] }`). Fields
 * mneme has no place for (`hash`, `agent_id`, `run_id`, `immutable`, ...) are ignored.
 */
const Mem0MemorySchema = z.looseObject({
  id: z.union([z.string(), z.number()]).optional(),
  memory: ContentSchema,
  user_id: PersonIdSchema.nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  categories: z.array(z.string()).nullish(),
  created_at: timeSchema('created_at').nullish(),
  updated_at: timeSchema('updated_at').nullish(),
});

type Mem0Memory = z.output<typeof Mem0MemorySchema>;

/** The category of a mem0 memory: its first category, else `metadata.category`, else `general`. */
function categoryOf(item: Mem0Memory): string {
  const named = item.categories?.find((category) => category.trim() !== '') ?? item.metadata?.category;
  return typeof named === 'string' && named.trim() !== '' ? parseInput(CategorySchema, named, 'category') : 'general';
}

/**
 * Adds a mem0 export's memories as personal memories of their `user_id`, with their category and
 * times (a `create` version at `created_at`, the mem0 id in its reason), in one transaction: an item
 * that is not a memory with a user id stops the import with its line (or index) and nothing is
 * written. The database need not be empty. The input is a JSON array, `{ "results": [...] }`, or one
 * memory a line.
 */
export async function importMem0(
  context: EngineContext,
  lines: AsyncIterable<string> | Iterable<string>,
): Promise<ImportReport> {
  const read: NumberedLine[] = [];
  for await (const line of numberedLines(lines)) read.push(line);
  const items = itemsOf(read);
  const now = context.clock.now();
  const parsed = items.map(({ where, value }) => {
    try {
      const item = parseInput(Mem0MemorySchema, value, 'mem0 memory');
      if (!item.user_id) {
        throw new MnemeError(
          ErrorCode.InvalidInput,
          'it has no user_id: mneme imports mem0 memories as personal memories of their user',
        );
      }
      return { where, item, userId: item.user_id };
    } catch (error) {
      throw lineError(where, error);
    }
  });
  const report = emptyReport('mem0', null);
  const session = await context.storage.transfer.beginImport();
  try {
    const users = [...new Set(parsed.map((entry) => entry.userId))];
    await session.putUsers(
      users.map((id) => ({ id, displayName: null, createdAt: now, updatedAt: now, leftNames: [] })),
    );
    report.users = users.length;
    // A mem0 id imported before (its create version names it) or earlier in the file is not imported again.
    const seen = new Set<string>();
    for (let start = 0; start < parsed.length; start += BATCH) {
      const batch = parsed.slice(start, start + BATCH);
      const before = await session.createReasons(
        batch.flatMap(({ item }) => (item.id === undefined ? [] : [reasonOf(item.id)])),
      );
      const fresh = batch.filter(({ item }) => {
        if (item.id === undefined) return true;
        const reason = reasonOf(item.id);
        if (before.has(reason) || seen.has(reason)) return false;
        seen.add(reason);
        return true;
      });
      report.duplicates += batch.length - fresh.length;
      if (fresh.length > 0) await writeBatch(session, fresh, now, report);
    }
    await session.commit();
    return report;
  } catch (error) {
    await session.rollback();
    throw error;
  }
}

/** The reason of the create version of a memory imported from mem0 with this id. */
function reasonOf(mem0Id: string | number): string {
  return `imported from mem0 memory ${mem0Id}`;
}

async function writeBatch(
  session: ImportSession,
  entries: ReadonlyArray<{ item: Mem0Memory; userId: string }>,
  now: number,
  report: ImportReport,
): Promise<void> {
  const rows = entries.map(({ item, userId }) => {
    const createdAt = item.created_at ?? now;
    const category = categoryOf(item);
    const memory: ImportedMemory = {
      content: item.memory,
      category,
      sector: sectorOf(category),
      scope: 'personal',
      owner: ownerKey('personal', { userId }),
      userId,
      channelId: null,
      projectId: null,
      topicId: null,
      source: 'manual',
      importance: 0.5,
      strength: 1,
      salience: 1,
      accessCount: 0,
      lastAccessedAt: null,
      pinned: false,
      sourceMessageIds: [],
      sourceIds: [],
      validFrom: createdAt,
      archivedAt: null,
      fadedAt: null,
      createdAt,
      updatedAt: Math.max(createdAt, item.updated_at ?? createdAt),
      decayedAt: null,
      searchContext: null,
      searchContextMessageId: null,
      chunkMessageId: null,
      chunkIndex: null,
    };
    return { memory, mem0Id: item.id };
  });
  const ids = await session.insertMemories(rows.map((row) => row.memory));
  await session.addVersions(
    rows.map((row, index) => ({
      memoryId: ids[index] ?? 0,
      version: 1,
      action: 'create' as const,
      actor: MEM0_ACTOR,
      reason: row.mem0Id === undefined ? 'imported from mem0' : reasonOf(row.mem0Id),
      changes: {},
      snapshot: {
        content: row.memory.content,
        category: row.memory.category,
        importance: row.memory.importance,
        pinned: false,
        archivedAt: null,
      },
      createdAt: row.memory.createdAt,
    })),
  );
  report.memories += ids.length;
  report.versions += ids.length;
}

/**
 * The items of a mem0 export, each with where it is (for errors): the whole text as one JSON
 * document (an array, `{ "results": [...] }`, or `{ "memories": [...] }`), else one item a line.
 */
function itemsOf(lines: readonly NumberedLine[]): Array<{ where: string; value: unknown }> {
  if (lines.length === 0) throw new MnemeError(ErrorCode.InvalidInput, 'the file is empty; nothing was imported');
  let document: unknown;
  try {
    document = JSON.parse(lines.map((line) => line.text).join('\n'));
  } catch {
    document = undefined;
  }
  const list = Array.isArray(document)
    ? document
    : typeof document === 'object' && document !== null
      ? ((document as { results?: unknown }).results ?? (document as { memories?: unknown }).memories)
      : undefined;
  if (Array.isArray(list)) return list.map((value, index) => ({ where: `item ${index + 1}`, value }));
  if (document !== undefined && lines.length > 1) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      'a mem0 export must be a JSON array of memories, { "results": [...] }, or one memory a line; nothing was imported',
    );
  }
  return lines.map((line) => {
    try {
      return { where: `line ${line.number}`, value: JSON.parse(line.text) as unknown };
    } catch (error) {
      throw new MnemeError(
        ErrorCode.InvalidInput,
        `line ${line.number}: not JSON (${(error as Error).message}); nothing was imported`,
      );
    }
  });
}
