import { decayPolicies } from './decay/decay.js';
import type { EngineContext } from './engine-context.js';
import type { Memory } from './types.js';

/** Gives a memory with its strength, salience and importance as of the time it was made for. */
export type AsOfNow = (memory: Memory) => Memory;

/**
 * What every face shows of memories: strength, salience and importance as of `now` (the engine's
 * clock by default) under the engine's decay policy, rather than as last stored. Reads the decay
 * times of `memories` in one query when the policy uses them; the function it returns applies the
 * policy to these memories, or to later states of them (after a retrieval's touch), and to nothing
 * else: a memory it was not made for is taken as never decayed in storage.
 */
export async function currentValues(
  context: EngineContext,
  memories: readonly Memory[],
  now = context.clock.now(),
): Promise<AsOfNow> {
  const decay = decayPolicies[context.policy.decay];
  const ids = memories.map((memory) => memory.id);
  const decayedAt = decay.usesDecayedAt ? await context.storage.memories.decayedAt(ids) : new Map<number, number>();
  return (memory) => ({ ...memory, ...decay.current(memory, decayedAt.get(memory.id) ?? null, now) });
}

/** `memories` with their strength, salience and importance as of now (see `currentValues`). */
export async function asOfNow(context: EngineContext, memories: readonly Memory[]): Promise<Memory[]> {
  return memories.map(await currentValues(context, memories));
}
