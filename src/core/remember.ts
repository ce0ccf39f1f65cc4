import { embedDocuments } from './embed-documents.js';
import type { EngineContext } from './engine-context.js';
import { ErrorCode, MnemeError } from './errors.js';
import { parseInput, RememberInputSchema } from './schemas.js';
import { ownerKey, sectorOf } from './scope.js';
import type { Memory } from './types.js';

/** Stores one manual memory: validated, embedded when a model exists, written with its version in one transaction. */
export async function remember(context: EngineContext, input: unknown): Promise<Memory> {
  const parsed = parseInput(RememberInputSchema, input, 'memory');
  if (parsed.topicId !== undefined && !(await context.storage.directory.getTopic(parsed.topicId))) {
    throw new MnemeError(
      ErrorCode.NotFound,
      `topic ${parsed.topicId} does not exist; create it with createTopic first, or leave topicId out`,
    );
  }
  const [embedding = null] = await embedDocuments(context, [parsed.content]);
  const [memory] = await context.storage.memories.insert(
    [
      {
        content: parsed.content,
        category: parsed.category,
        sector: sectorOf(parsed.category),
        scope: parsed.scope,
        owner: ownerKey(parsed.scope, parsed),
        userId: parsed.userId ?? null,
        channelId: parsed.channelId ?? null,
        projectId: parsed.projectId ?? null,
        topicId: parsed.topicId ?? null,
        source: 'manual',
        importance: parsed.importance,
        pinned: parsed.pinned,
        sourceMessageIds: [],
        sourceIds: [],
        embedding,
      },
    ],
    { at: context.clock.now(), actor: parsed.actor ?? null },
  );
  if (!memory) throw new Error('storage returned no memory for one insert');
  return memory;
}
