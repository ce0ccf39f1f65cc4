import { type AccessView, accessOf, everyAccess } from './access-view.js';
import { createApiKeys } from './api-keys.js';
import { checkedEmbedder } from './checked-embedder.js';
import { asOfNow } from './current-values.js';
import { createAudienceWatch } from './derived-audience.js';
import { createDirectory } from './directory.js';
import type { EngineContext } from './engine-context.js';
import { guardMneme, type MemoryReads } from './guarded-mneme.js';
import { createIdempotencyKeys } from './idempotency.js';
import { createIngest } from './ingest/ingest.js';
import {
  analyticsSeries,
  channelMessages,
  listChannels,
  maintenanceStatus,
  memorySources,
  recordReports,
} from './inspection.js';
import { createMaintain } from './maintenance/maintain.js';
import type { MaintenanceTask } from './maintenance/maintenance-task.js';
import { memoryStats } from './memory-stats.js';
import type { Mneme } from './mneme.js';
import { changePolicy, loadPolicy } from './policy-state.js';
import { buildContext } from './recall/context-block.js';
import { recall } from './recall/recall.js';
import { reembedMissing, vectorStatus } from './reembed.js';
import { remember } from './remember.js';
import {
  GetInputSchema,
  HistoryInputSchema,
  ListFilterSchema,
  type MemoryActionInput,
  parseInput,
  UserIdSchema,
} from './schemas.js';
import { visibleOwners } from './scope.js';
import { createTouchQueue } from './touch-queue.js';
import { exportData } from './transfer/export-data.js';
import { importData } from './transfer/import-data.js';
import type { Memory } from './types.js';
import { forgetMemory, restoreMemory, updateMemory } from './update-memory.js';
import { beyondItsReaders, requireVisible } from './visibility.js';

/** Builds the engine over already-chosen adapters. `createMneme` is the usual way in. */
export function createEngine(context: EngineContext): Mneme {
  // Every vector a model returns is checked before anything stores or searches with it. The context is
  // the engine's own from here on (a policy change is written into it), so the model is replaced in it.
  if (context.embedder) context.embedder = checkedEmbedder(context.embedder);
  const { storage, clock } = context;
  const byId = (input: MemoryActionInput | number) => (typeof input === 'number' ? { id: input } : input);
  const { settleMarks, ...ingest } = createIngest(context);
  const touches = createTouchQueue({ store: storage.memories, logger: context.logger });
  /** A memory as every face shows it: its decaying fields as of now, under the engine's decay policy. */
  const maintain = createMaintain(context);
  const lastReports = new Map<MaintenanceTask, { report: unknown; at: string }>();
  const current = async (memory: Memory) => (await asOfNow(context, [memory]))[0] ?? memory;
  // Every read of memories first looks, now and then, for the audience changes a stopped process left (ADR 5), and
  // always checks those of this engine's appends whose check failed (attack22: a retry answered from its stored
  // Idempotency-Key answer runs no append that would check them, and a read showed their spaces' memories unchecked).
  const lookForMarks = createAudienceWatch(context);
  const watch = async () => {
    await settleMarks();
    await lookForMarks();
  };
  const watched =
    <A extends unknown[], R>(read: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await watch();
      return read(...args);
    };

  /**
   * The reads that show memories, as `view` shows their retrievals (ADR 52): the engine's own show every retrieval, a
   * user key's (`as`) only those of its own personal memories. The view applies to memories as stored, before their
   * values are made current or scored, since both read the last access.
   */
  const reads = (view: AccessView): MemoryReads => {
    const shown = async (memory: Memory) => current(view(memory));
    return {
      recall: watched((input) => recall(context, input, touches, view)),
      context: watched((input) => buildContext(context, input, touches, view)),
      get: watched(async (input) => {
        const parsed = parseInput(GetInputSchema, typeof input === 'number' ? { id: input } : input, 'get');
        return shown(await requireVisible(context, parsed.id, parsed.viewer));
      }),
      update: async (input) => shown(await updateMemory(context, input)),
      forget: async (input) => shown(await forgetMemory(context, byId(input))),
      restore: async (input) => shown(await restoreMemory(context, byId(input))),
      list: watched(async (filter = {}) => {
        const { viewer, ...parsed } = parseInput(ListFilterSchema, filter, 'list filter');
        const page = await storage.memories.list({ ...parsed, owners: viewer ? visibleOwners(viewer) : null });
        // A viewer's list leaves out what the audience check archived (ADR 52); the page's total still counts it.
        const shownTo: Memory[] = [];
        const read = new Map();
        for (const memory of page.memories) {
          if (viewer === undefined || !(await beyondItsReaders(context, memory, read))) shownTo.push(view(memory));
        }
        return { ...page, memories: await asOfNow(context, shownTo) };
      }),
    };
  };

  const engine: Mneme = {
    ...ingest,
    ...createDirectory(context),
    remember: (input) => remember(context, input),
    ...reads(everyAccess),

    async purgeUser(userId) {
      return storage.memories.purgeUser(parseInput(UserIdSchema, userId, 'user id'));
    },

    history: watched(async (input) => {
      const parsed = parseInput(HistoryInputSchema, typeof input === 'object' ? input : { id: input }, 'history');
      if (parsed.viewer) await requireVisible(context, parsed.id, parsed.viewer);
      const { after, limit } = parsed;
      return storage.memories.history(parsed.id, {
        ...(after === undefined ? {} : { after }),
        ...(limit === undefined ? {} : { limit }),
      });
    }),

    links: watched(async (input) => {
      const parsed = parseInput(GetInputSchema, typeof input === 'number' ? { id: input } : input, 'links');
      await requireVisible(context, parsed.id, parsed.viewer);
      return storage.links.of(parsed.id);
    }),

    sources: watched(async (input) => {
      const parsed = parseInput(GetInputSchema, typeof input === 'number' ? { id: input } : input, 'sources');
      return memorySources(context, parsed.id, parsed.viewer);
    }),

    stats: () => memoryStats(context),
    analytics: () => analyticsSeries(context),
    channels: () => listChannels(context),
    messages: watched((input) =>
      // An administrator sees every memory a message's extraction can write: the sender's, the channel's, the topic's and its project's.
      channelMessages(context, input, async (message) => {
        const projectId = message.topicId && (await storage.directory.getTopic(message.topicId))?.projectId;
        return {
          userId: message.senderId,
          channelId: message.channelId,
          ...(message.topicId === null ? {} : { topicId: message.topicId }),
          ...(projectId ? { projectId } : {}),
        };
      }),
    ),
    maintenanceStatus: () => maintenanceStatus(context, lastReports),

    async policy() {
      const state = await loadPolicy(storage.policy, context.policy, clock.now());
      context.policy = state.policy;
      return state;
    },

    async setPolicy(input) {
      const state = await changePolicy(storage.policy, input, clock.now());
      context.policy = state.policy;
      return state;
    },

    policyHistory: () => storage.policy.history(),

    // An export reads memories too: a user's holds what they may see, as of the marks checked first.
    async *exportData(options) {
      await watch();
      yield* exportData(context, options);
    },
    async importData(lines, options) {
      // The import holds the write transaction: extraction owed from before must not run inside it.
      await ingest.whenIdle();
      return importData(context, lines, options);
    },
    maintain: async (input) => recordReports(lastReports, await maintain(input)),
    reembed: (options) => reembedMissing(context, options),
    vectorStatus: () => vectorStatus(context),
    async health() {
      const { reason } = storage.health();
      return reason === null ? { status: 'ok' } : { status: 'unavailable', reason };
    },
    apiKeys: createApiKeys(storage.apiKeys, clock),
    idempotency: createIdempotencyKeys(storage.idempotency, clock, () => storage.messages.purges()),
    as: (principal) =>
      principal.kind === 'admin'
        ? engine
        : guardMneme(engine, context, principal, watch, reads(accessOf(principal.userId))),

    async close() {
      await ingest.close();
      await touches.close();
      await storage.close();
    },
  };
  return engine;
}
