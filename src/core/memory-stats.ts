import { DAY_MS, decayPolicies } from './decay/decay.js';
import type { EngineContext } from './engine-context.js';
import { duePages } from './maintenance/decay-task.js';
import type { MemoryStats } from './types.js';

/** How far ahead `expiring` looks, in days. */
export const EXPIRING_WITHIN_DAYS = 7;

/**
 * The totals of `stats` at the engine's clock; `expiring` counts the active, unpinned memories the
 * engine's decay policy will archive or remove within 7 days unless they are retrieved (already past
 * the line included), read a page at a time as the decay task reads them (the memories due by then); none when the policy's
 * maintenance does not run decay.
 */
export async function memoryStats(context: EngineContext): Promise<MemoryStats> {
  const now = context.clock.now();
  const decay = decayPolicies[context.policy.decay];
  const horizon = now + EXPIRING_WITHIN_DAYS * DAY_MS;
  const stored = await context.storage.memories.stats(now);
  let expiring = 0;
  // A database whose policy does not run decay archives nothing, whatever the decay model says.
  const decays = context.policy.maintenance.tasks.includes('decay');
  // A memory that expires by the horizon is due by then (ADR 9, session 8): only those are read.
  for await (const page of decays ? duePages(context.storage, decay, horizon) : []) {
    for (const memory of page) if (decay.step(memory, memory.decayedAt, horizon).isExpired) expiring++;
  }
  const { mostAccessed, messages, links, ...totals } = stored;
  return { ...totals, expiring, mostAccessed, messages, links };
}
