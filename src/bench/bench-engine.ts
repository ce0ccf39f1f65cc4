import { createMneme, type Mneme, type Viewer } from '../index.js';
import type { RecallViewer } from './bench-report.js';
import type { PrecomputedEmbeddingModel } from './precomputed-embedding-model.js';
import type { SyntheticCorpus, SyntheticMemory, SyntheticQuery } from './synthetic-corpus.js';

/** What the bench's mneme engines share with the process that runs its ingest and maintenance phase. */
export const TOP_K = 10;
export const DIMENSIONS = 768;
export const MODEL_ID = 'bench-precomputed-768';

const quiet = { warn: () => {}, info: () => {} };

/** mneme over the bench's store: the precomputed model (or none, the lexical engine), no backfill, no log. */
export function openBenchMneme(path: string, embedder: PrecomputedEmbeddingModel | 'none'): Promise<Mneme> {
  return createMneme({ path, embedder, backfill: false, logger: quiet });
}

/** The unscoped viewer carries no ids (it sees global memories); the scoped one is one user. */
export function viewerOf(query: SyntheticQuery, viewer: RecallViewer): Viewer {
  return viewer === 'scoped' ? { userId: query.userId } : {};
}

/** The text of a vector-only recall: a token no memory contains, so the full-text leg finds nothing. */
export function vectorOnlyText(index: number): string {
  return `qv${index}`;
}

/** Remembers one corpus memory through `remember()`, its vector lent to the precomputed model for the call. */
export async function rememberOne(
  mneme: Mneme,
  model: PrecomputedEmbeddingModel,
  memory: SyntheticMemory,
): Promise<void> {
  model.set(memory.content, memory.vector);
  await mneme.remember({
    content: memory.content,
    scope: memory.scope,
    ...(memory.userId ? { userId: memory.userId } : {}),
    ...(memory.channelId ? { channelId: memory.channelId } : {}),
  });
  model.delete(memory.content);
}

/** The corpus's message `index` as an `ingest()` input. */
export function benchMessage(corpus: SyntheticCorpus, index: number) {
  const message = corpus.message(index);
  return {
    channelId: message.channelId,
    sender: message.userId,
    senderName: message.userName,
    content: message.content,
  };
}

/** A full garbage collection, when node runs with --expose-gc (`npm run bench` does). */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** Operations per second, to one decimal (0 for no time). */
export function rate(count: number, milliseconds: number): number {
  return milliseconds > 0 ? Math.round((count / milliseconds) * 1000 * 10) / 10 : 0;
}
