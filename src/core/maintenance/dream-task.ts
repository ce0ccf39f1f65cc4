import { createHash } from 'node:crypto';
import type { NewMemory } from '../../storage/memory-store.js';
import { embedDocuments } from '../embed-documents.js';
import type { EngineContext } from '../engine-context.js';
import { errorMessage, isMnemeError } from '../errors.js';
import { type Dreamer, DreamInsightSchema } from '../ports/dreamer.js';
import { ownerKey, sectorOf } from '../scope.js';
import type { Memory } from '../types.js';
import { ALL_CHANNELS, MAINTENANCE_ACTOR, type TaskReport } from './maintenance-task.js';

/** An owner is dreamed about once it has at least this many memories newer than the dream watermark. */
export const DREAM_MIN_MEMORIES = 3;
/** At most this many of an owner's newest memories go into one dream. */
export const DREAM_MAX_MEMORIES = 50;
/** Importance of a memory a dream writes. */
export const DREAM_IMPORTANCE = 0.6;
/** Memories read per page. */
const PAGE_SIZE = 500;
/**
 * The `maintenance_state` task of dream's per-owner records: one row for each owner whose insights a run stored,
 * written in their insert's transaction, keyed by a hash of the owner (its key names a user; a purge leaves no user
 * id behind in them), its watermark the last memory id of the run. Removed once the run's `dream` watermark moved.
 */
export const DREAM_OWNER_TASK = 'dream-owner';

/** What one dream run did. */
export interface DreamReport extends TaskReport {
  /** Owners (scopes) the dreamer reflected on. */
  owners: number;
  /** Higher-level memories written. */
  insights: number;
}

/**
 * The reflective pass: for each owner (and user) with 3 or more memories newer than the
 * `last_dream` watermark (dream memories themselves excluded), asks the dreamer for a few
 * higher-level memories (patterns, recurring preferences) and writes them in that owner's scope,
 * with every memory the dreamer was shown as `source_ids` (it names its evidence among them; an insight naming none
 * is dropped). Without a dreamer (no chat model) it is skipped
 * and the watermark stays. Each owner's insights are stored with a record that the owner is done
 * (`DREAM_OWNER_TASK`), in one transaction; the watermark moves after the last owner. A run that finds
 * records past the watermark (the process died partway, or an owner's insights were refused: the watermark stopped
 * before its memories) finishes that run: the same memories, up to its last memory id, and only the owners it had
 * not done.
 */
export async function runDream(context: EngineContext, dreamer: Dreamer | null, now: number): Promise<DreamReport> {
  const report: DreamReport = { owners: 0, insights: 0, skipped: null };
  if (!dreamer) return { ...report, skipped: 'no chat model configured' };
  const { storage } = context;
  const state = await storage.maintenanceState.get(ALL_CHANNELS, 'dream');
  const watermark = state?.watermark ?? 0;
  // Records of an interrupted run: the owners it stored insights of, and its last memory id (the same in each).
  const interrupted = (await storage.maintenanceState.list(DREAM_OWNER_TASK)).filter(
    (record) => (record.watermark ?? 0) > watermark,
  );
  const done = new Set(interrupted.map((record) => record.channelId));
  const latest =
    interrupted.length > 0
      ? Math.max(...interrupted.map((record) => record.watermark ?? 0))
      : await storage.maintenance.latestMemoryId();
  const byOwner = new Map<string, Memory[]>();
  /** Where the watermark stops when an owner's insights were refused: the next run dreams that owner again (attack 31e). */
  let retryAfter = Number.POSITIVE_INFINITY;
  let afterId = watermark;
  while (afterId < latest) {
    const page = await storage.maintenance.listAfter(afterId, PAGE_SIZE);
    if (page.length === 0) break;
    afterId = page.at(-1)?.id ?? latest;
    for (const memory of page) {
      if (memory.id > latest || memory.source === 'dream') continue;
      // One user's memories per dream, so that purging a user deletes every insight drawn from theirs. The owner key
      // and the user id as a JSON pair: ids hold spaces, and `room:ops ann` + `lee` joined with one read as
      // `room:ops` + `ann lee`, two rooms dreamed together (attack27a).
      const key = JSON.stringify([ownerKey(memory.scope, memory), memory.userId ?? '']);
      const memories = byOwner.get(key) ?? [];
      memories.push(memory);
      if (memories.length > DREAM_MAX_MEMORIES) memories.shift();
      byOwner.set(key, memories);
    }
  }

  for (const [key, memories] of byOwner) {
    const [first] = memories;
    if (!first || memories.length < DREAM_MIN_MEMORIES) continue;
    const record = recordKey(key);
    // A run interrupted before this mneme recorded owners by the space-joined key (`legacyRecordKey`).
    if (done.has(record) || done.has(legacyRecordKey(key))) continue;
    const owner = ownerKey(first.scope, first);
    report.owners++;
    let proposed: unknown[];
    try {
      proposed = await dreamer.dream({
        scope: first.scope,
        memories: memories.map(({ id, content, category, createdAt }) => ({ id, content, category, createdAt })),
      });
    } catch (error) {
      context.logger.warn(`the ${dreamer.id} dreamer failed for ${owner}: ${errorMessage(error)}`);
      continue;
    }
    const known = new Set(memories.map((memory) => memory.id));
    // Built on every memory the dreamer was shown, not only those it names as evidence: it may write what it read
    // into an insight and name one or two, and what follows an insight by its sources (an audience change, a purge;
    // ADR 5) would leave it where a memory it quotes no longer is (ADR 46).
    const shown = [...known].sort((a, b) => a - b);
    const insights: NewMemory[] = [];
    for (const candidate of proposed) {
      const parsed = DreamInsightSchema.safeParse(candidate);
      if (!parsed.success) continue;
      // An insight naming none of them is refused, as before: the dreamer answered about something else.
      if (!parsed.data.sourceIds.some((id) => known.has(id))) continue;
      const sourceIds = shown;
      const [embedding = null] = await embedDocuments(context, [parsed.data.content]);
      insights.push({
        content: parsed.data.content,
        category: parsed.data.category,
        sector: sectorOf(parsed.data.category),
        scope: first.scope,
        owner,
        userId: first.userId,
        channelId: first.channelId,
        projectId: first.projectId,
        topicId: first.topicId,
        source: 'dream',
        importance: DREAM_IMPORTANCE,
        pinned: false,
        sourceMessageIds: [],
        sourceIds,
        embedding,
      });
    }
    if (insights.length === 0) continue;
    try {
      // A purge while the dreamer reflected: its insights quote what the purged user remembered. An audience
      // change that moved a memory out of the owner meanwhile (CONFLICT): they would quote it to those it left.
      // The owner's record in the insights' transaction: a process killed after them does not dream it again.
      await storage.memories.insert(
        insights,
        { at: now, actor: MAINTENANCE_ACTOR, reason: `dream by ${dreamer.id}` },
        {
          sourcesMustExist: true,
          state: { channelId: record, task: DREAM_OWNER_TASK, changes: { watermark: latest, lastRunAt: now } },
        },
      );
    } catch (error) {
      if (!isMnemeError(error, 'NOT_FOUND') && !isMnemeError(error, 'CONFLICT')) throw error;
      // Refused over a memory purged, moved or forgotten meanwhile: the watermark stays before this owner's memories,
      // so the next run (as an interrupted one: the owners stored here are not dreamed again) dreams what is left.
      // Not when this run finishes an earlier one: its last memory id is fixed, and a refusal every time would hold
      // every later memory out of dreams.
      if (interrupted.length === 0) retryAfter = Math.min(retryAfter, first.id - 1);
      continue;
    }
    report.insights += insights.length;
  }

  const moved = Math.max(Math.min(latest, retryAfter), watermark);
  await storage.maintenanceState.set(ALL_CHANNELS, 'dream', { watermark: moved, lastRunAt: now });
  // The run's records, and any an earlier run left (killed after its watermark moved): the watermark covers them.
  for (const record of await storage.maintenanceState.list(DREAM_OWNER_TASK)) {
    if ((record.watermark ?? 0) <= moved) {
      await storage.maintenanceState.remove(record.channelId, DREAM_OWNER_TASK, { deferred: true });
    }
  }
  return report;
}

/** The channel id of an owner's record (`DREAM_OWNER_TASK`): a hash of its key, which names its user. */
function recordKey(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 32);
}

/** The record an earlier mneme wrote for the same owner: the hash of its owner key and user id joined by a space. */
function legacyRecordKey(key: string): string {
  const [owner, userId] = JSON.parse(key) as [string, string];
  return recordKey(`${owner} ${userId}`);
}
