import type { MemoryChanges } from '../storage/memory-store.js';
import { channelOutsideAudience } from './derived-audience.js';
import { embedDocuments } from './embed-documents.js';
import type { EngineContext } from './engine-context.js';
import { ErrorCode, MnemeError } from './errors.js';
import { MemoryActionInputSchema, parseInput, UpdateInputSchema } from './schemas.js';
import { ownerKey, sectorOf, visibleOwners } from './scope.js';
import type { Memory, Viewer } from './types.js';
import { requireVisible } from './visibility.js';

/**
 * Edits a memory; new content is re-embedded; a version row records the diff. An importance given is
 * the importance as of now: its decay restarts from the edit.
 */
export async function updateMemory(context: EngineContext, input: unknown): Promise<Memory> {
  const parsed = parseInput(UpdateInputSchema, input, 'update');
  if (parsed.viewer) await requireVisible(context, parsed.id, parsed.viewer);
  const now = context.clock.now();
  const changes: MemoryChanges = {};
  if (parsed.content !== undefined) {
    changes.content = parsed.content;
    const [embedding = null] = await embedDocuments(context, [parsed.content]);
    changes.embedding = embedding;
  }
  if (parsed.category !== undefined) {
    changes.category = parsed.category;
    changes.sector = sectorOf(parsed.category);
  }
  if (parsed.importance !== undefined) {
    changes.importance = parsed.importance;
    changes.decayedAt = now;
  }
  if (parsed.pinned !== undefined) changes.pinned = parsed.pinned;
  return context.storage.memories.update(parsed.id, changes, {
    at: now,
    actor: parsed.actor ?? null,
    reason: parsed.reason ?? null,
    ...seenBy(parsed.viewer),
  });
}

/** Soft-deletes a memory: it leaves every search, its vector is removed, a version row says who and why. */
export async function forgetMemory(context: EngineContext, input: unknown): Promise<Memory> {
  const parsed = parseInput(MemoryActionInputSchema, input, 'forget');
  if (parsed.viewer) await requireVisible(context, parsed.id, parsed.viewer);
  const [memory] = await context.storage.memories.archive([parsed.id], {
    at: context.clock.now(),
    actor: parsed.actor ?? null,
    reason: parsed.reason ?? null,
    ...seenBy(parsed.viewer),
  });
  if (!memory) throw new MnemeError(ErrorCode.NotFound, `memory ${parsed.id} does not exist`);
  return memory;
}

/** Brings an archived memory back, re-embedded. */
export async function restoreMemory(context: EngineContext, input: unknown): Promise<Memory> {
  const parsed = parseInput(MemoryActionInputSchema, input, 'restore');
  const existing = await requireVisible(context, parsed.id, parsed.viewer);
  // One the audience check archived (its readers may not read where it came from) stays so (ADR 52).
  const outside = existing.archivedAt === null ? null : await channelOutsideAudience(context, existing);
  if (outside !== null) {
    throw new MnemeError(
      ErrorCode.Conflict,
      `memory ${existing.id} stays archived: it came from channel ${outside}, which not everyone who would see it (${ownerKey(existing.scope, existing)}) may read; write what may be shown to them as a new memory`,
    );
  }
  // A faded memory kept its vector (ADR 9); a forgotten one is embedded again.
  const needsVector = existing.archivedAt !== null && existing.fadedAt === null;
  const [embedding = null] = needsVector ? await embedDocuments(context, [existing.content]) : [];
  return context.storage.memories.restore(parsed.id, embedding, {
    at: context.clock.now(),
    actor: parsed.actor ?? null,
    reason: parsed.reason ?? null,
    ...seenBy(parsed.viewer),
  });
}

/**
 * A write made for a viewer is checked against its owner keys again in the write's transaction: a memory an audience
 * change moved out of them since `requireVisible` is refused as one the viewer may not see (attack 31c).
 */
function seenBy(viewer: Viewer | undefined): { visibleTo?: readonly string[] } {
  return viewer === undefined ? {} : { visibleTo: visibleOwners(viewer) };
}
