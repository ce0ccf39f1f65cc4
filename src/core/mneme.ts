import type { EngineContext } from './engine-context.js';
import { ErrorCode, MnemeError } from './errors.js';
import { remember } from './remember.js';
import {
  type GetInput,
  GetInputSchema,
  type ListFilter,
  ListFilterSchema,
  type MemoryActionInput,
  MemoryIdSchema,
  parseInput,
  type RememberInput,
  type UpdateInput,
  UserIdSchema,
} from './schemas.js';
import { ownerKey, visibleOwners } from './scope.js';
import type { Memory, MemoryPage, MemoryStats, MemoryVersion, PurgeReport } from './types.js';
import { forgetMemory, restoreMemory, updateMemory } from './update-memory.js';

/** The memory engine: one object, the same behaviour behind every face. */
export interface Mneme {
  /** Stores a manual memory (source `manual`). Scope defaults to `global`; `session` is refused. */
  remember(input: RememberInput): Promise<Memory>;
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
  /** Every version of a memory, oldest first. */
  history(id: number | string): Promise<MemoryVersion[]>;
  stats(): Promise<MemoryStats>;
  /** Closes the database; the engine cannot be used afterwards. */
  close(): Promise<void>;
}

/** Builds the engine over already-chosen adapters. `createMneme` is the usual way in. */
export function createEngine(context: EngineContext): Mneme {
  const { storage, clock } = context;
  const byId = (input: MemoryActionInput | number) => (typeof input === 'number' ? { id: input } : input);

  return {
    remember: (input) => remember(context, input),

    async get(input) {
      const parsed = parseInput(GetInputSchema, typeof input === 'number' ? { id: input } : input, 'get');
      const [memory] = await storage.memories.get([parsed.id]);
      const visible =
        memory && (!parsed.viewer || visibleOwners(parsed.viewer).includes(ownerKey(memory.scope, memory)));
      if (!memory || !visible) throw new MnemeError(ErrorCode.NotFound, `memory ${parsed.id} does not exist`);
      return memory;
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

    async history(id) {
      return storage.memories.history(parseInput(MemoryIdSchema, id, 'memory id'));
    },

    stats: () => storage.memories.stats(clock.now()),
    close: () => storage.close(),
  };
}
