import type { MemoryLink } from '../storage/link-store.js';
import { type ApiKeys, createApiKeys } from './api-keys.js';
import type { EngineContext } from './engine-context.js';
import { createIngest, type MnemeIngest } from './ingest/ingest.js';
import { createMaintain, type MaintainInput, type MaintenanceReport } from './maintenance/maintain.js';
import { buildContext, type ContextResult } from './recall/context-block.js';
import { type RecallResult, recall } from './recall/recall.js';
import {
  type ReembedOptions,
  type ReembedProgress,
  reembedMissing,
  type VectorStatus,
  vectorStatus,
} from './reembed.js';
import { remember } from './remember.js';
import {
  type ContextInput,
  type GetInput,
  GetInputSchema,
  type ListFilter,
  ListFilterSchema,
  type MemoryActionInput,
  parseInput,
  type RecallInput,
  type RememberInput,
  type UpdateInput,
  UserIdSchema,
} from './schemas.js';
import { visibleOwners } from './scope.js';
import type { Memory, MemoryPage, MemoryStats, MemoryVersion, PurgeReport } from './types.js';
import { forgetMemory, restoreMemory, updateMemory } from './update-memory.js';
import { requireVisible } from './visibility.js';

/** The memory engine: one object, the same behaviour behind every face. */
export interface Mneme extends MnemeIngest {
  /** Stores a manual memory (source `manual`). Scope defaults to `global`; `session` is refused. */
  remember(input: RememberInput): Promise<Memory>;
  /**
   * The memories that matter for a query, for a viewer: full-text and vector search in the viewer's
   * scopes, fused, scored (every hit explains its score) and joined by linked memories; each
   * returned memory is reinforced. topK 10 by default, at most 100.
   */
  recall(input: RecallInput): Promise<RecallResult>;
  /**
   * The context block for the next reply: a conversation-aware recall (topK 5 by default) formatted
   * in the configured format within the word budget, memories quoted as data.
   */
  context(input: ContextInput): Promise<ContextResult>;
  /** One memory by id; with a viewer, NOT_FOUND unless that viewer may see it. */
  get(input: GetInput | number): Promise<Memory>;
  /** Edits content, category, importance or pinned; keeps a version; new content is re-embedded. */
  update(input: UpdateInput): Promise<Memory>;
  /** Soft-deletes: archived, vector removed, version kept. */
  forget(input: MemoryActionInput | number): Promise<Memory>;
  /** Undoes `forget`. */
  restore(input: MemoryActionInput | number): Promise<Memory>;
  /** Hard-deletes every message, memory, vector, version and link of one user (data-protection requests). */
  purgeUser(userId: string): Promise<PurgeReport>;
  /** Memories by filter, newest first, a page at a time. */
  list(filter?: ListFilter): Promise<MemoryPage>;
  /** Every version of a memory, oldest first; with a viewer, NOT_FOUND unless that viewer may see it. */
  history(input: GetInput | number | string): Promise<MemoryVersion[]>;
  /** Every link from or to a memory; with a viewer, NOT_FOUND unless that viewer may see it. */
  links(input: GetInput | number): Promise<MemoryLink[]>;
  stats(): Promise<MemoryStats>;
  /**
   * Runs background maintenance now (decay, episodes, consolidate, link, dream; all by default) and
   * reports what each task did. `now` runs it as of another time. A task already running is skipped.
   */
  maintain(input?: MaintainInput): Promise<MaintenanceReport>;
  /**
   * Gives every active memory without a vector of the current embedding model one, in batches, with
   * progress; resumable (after a model change, or for memories stored while the model was down).
   * CONFIG_INVALID without an embedding model.
   */
  reembed(options?: ReembedOptions): Promise<ReembedProgress>;
  /** The model the vector index holds and how many active memories lack a vector of the current model. */
  vectorStatus(): Promise<VectorStatus>;
  /** API keys of the HTTP service: created, listed, revoked, checked. */
  readonly apiKeys: ApiKeys;
  /** Closes the database; the engine cannot be used afterwards. */
  close(): Promise<void>;
}

/** Builds the engine over already-chosen adapters. `createMneme` is the usual way in. */
export function createEngine(context: EngineContext): Mneme {
  const { storage, clock } = context;
  const byId = (input: MemoryActionInput | number) => (typeof input === 'number' ? { id: input } : input);
  const ingest = createIngest(context);

  return {
    ...ingest,
    remember: (input) => remember(context, input),
    recall: (input) => recall(context, input),
    context: (input) => buildContext(context, input),

    async get(input) {
      const parsed = parseInput(GetInputSchema, typeof input === 'number' ? { id: input } : input, 'get');
      return requireVisible(context, parsed.id, parsed.viewer);
    },

    update: (input) => updateMemory(context, input),
    forget: (input) => forgetMemory(context, byId(input)),
    restore: (input) => restoreMemory(context, byId(input)),

    async purgeUser(userId) {
      return storage.memories.purgeUser(parseInput(UserIdSchema, userId, 'user id'));
    },

    async list(filter = {}) {
      const { viewer, ...parsed } = parseInput(ListFilterSchema, filter, 'list filter');
      return storage.memories.list({ ...parsed, owners: viewer ? visibleOwners(viewer) : null });
    },

    async history(input) {
      const parsed = parseInput(GetInputSchema, typeof input === 'object' ? input : { id: input }, 'history');
      if (parsed.viewer) await requireVisible(context, parsed.id, parsed.viewer);
      return storage.memories.history(parsed.id);
    },

    async links(input) {
      const parsed = parseInput(GetInputSchema, typeof input === 'number' ? { id: input } : input, 'links');
      await requireVisible(context, parsed.id, parsed.viewer);
      return storage.links.of(parsed.id);
    },

    stats: () => storage.memories.stats(clock.now()),
    maintain: createMaintain(context),
    reembed: (options) => reembedMissing(context, options),
    vectorStatus: () => vectorStatus(context),
    apiKeys: createApiKeys(storage.apiKeys, clock),

    async close() {
      await ingest.close();
      await storage.close();
    },
  };
}
