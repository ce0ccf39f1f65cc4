import { type AccessView, everyAccess } from '../access-view.js';
import { currentValues } from '../current-values.js';
import type { EngineContext } from '../engine-context.js';
import { ContextInputSchema, parseInput } from '../schemas.js';
import type { TouchQueue } from '../touch-queue.js';
import { formatContext } from './context-format.js';
import { findHits, type RecallHit, touchHits, type VectorLegStatus } from './recall.js';

/** What `context` returns: the block for the prompt and the memories in it. */
export interface ContextResult {
  /** The block in the configured format, or an empty string when no memory was found or fits. */
  text: string;
  /** The memories in the block, in block order, each with the reasons it was chosen. */
  hits: RecallHit[];
  /** Memories found but left out because they did not fit the word budget. */
  omitted: number;
  /** Memories found but left out because their calibrated relevance is below `context.minRelevance`. */
  belowThreshold: number;
  /** How many words the block holds (at most the policy's word budget). */
  words: number;
  vectorLeg: VectorLegStatus;
}

/**
 * The context block for the next reply: a recall (conversation-aware and topK 5 unless the call or
 * the policy's `context` section say otherwise), without the hits under the quality threshold
 * (`context.minRelevance`), formatted within the word budget, each memory's values as of now. Only the memories that made it into the block are touched (best effort, through
 * `touches`): one left out for the budget was not seen by the model. With `inspect`, none is: nothing
 * is written.
 */
export async function buildContext(
  context: EngineContext,
  input: unknown,
  touches: TouchQueue,
  /** How the reader is shown retrievals (ADR 52): a user key's context scores others' memories as never retrieved. */
  view: AccessView = everyAccess,
): Promise<ContextResult> {
  const request = parseInput(ContextInputSchema, input, 'context input');
  const { policy } = context;
  const found = await findHits(
    context,
    {
      ...request,
      topK: request.topK ?? policy.context.topK,
      conversationAware: request.conversationAware ?? policy.context.conversationAware,
      explain: false,
    },
    view,
  );
  const relevant = found.hits.filter((hit) => hit.calibratedRelevance >= policy.context.minRelevance);
  const current = await currentValues(
    context,
    relevant.map((hit) => hit.memory),
  );
  const shown = (hits: readonly RecallHit[]) => hits.map((hit) => ({ ...hit, memory: current(view(hit.memory)) }));
  const formatted = formatContext(shown(relevant), policy.context);
  const inBlock = formatted.included.flatMap((index) => relevant[index] ?? []);
  return {
    text: formatted.text,
    hits: shown(request.inspect ? inBlock : await touchHits(context, inBlock, touches)),
    omitted: relevant.length - inBlock.length,
    belowThreshold: found.hits.length - relevant.length,
    words: formatted.words,
    vectorLeg: found.vectorLeg,
  };
}
