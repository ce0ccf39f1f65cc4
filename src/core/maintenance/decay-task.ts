import type { DecayCandidate, DecayCursor, DecayDueRule, ImportanceChange } from '../../storage/maintenance-store.js';
import type { Storage } from '../../storage/storage.js';
import { decayPolicies } from '../decay/decay.js';
import type { DecayPolicy } from '../decay/decay-policy.js';
import type { EngineContext } from '../engine-context.js';
import type { MnemePolicy } from '../policy.js';
import { ALL_CHANNELS, MAINTENANCE_ACTOR, type TaskReport } from './maintenance-task.js';

/** Memories decay reads per page. */
const PAGE_SIZE = 500;

/** What one decay run did. */
export interface DecayReport extends TaskReport {
  policy: MnemePolicy['decay'];
  /** Active, unpinned memories due under the policy's rule, read and stepped (before session 8: every active, unpinned memory). */
  checked: number;
  /**
   * Of those, how many have a signal below its stored value now (importance steps: how many were downgraded), the
   * write their step asked for (a downgrade, a rest) stored: one retrieved, edited or pinned since the read is not.
   */
  decayed: number;
  /** How many fell below the line and were archived. */
  archived: number;
}

/** How a decay run reads its memories. */
export interface DecayRunOptions {
  /**
   * Read every active, unpinned memory, as decay did before session 8, instead of only the memories
   * due under the policy's rule: what a run does is the same (a test compares the two).
   */
  everyMemory?: boolean;
}

/**
 * Applies the engine's decay policy (core/decay/) at `now` to the active, unpinned memories due under
 * its rule (ADR 9, session 8: before its due time a memory's `step` does nothing), a page at a time:
 * stores the changes its `step` asks for, with the time they are applied up to, and archives the
 * memories below its line, each with the policy's reason. A policy computes from the time since the
 * last retrieval, so a missed run is caught up exactly.
 */
export async function runDecay(
  context: EngineContext,
  now: number,
  options: DecayRunOptions = {},
): Promise<DecayReport> {
  const { policy, storage } = context;
  const decay = decayPolicies[policy.decay];
  const report: DecayReport = { policy: policy.decay, checked: 0, decayed: 0, archived: 0, skipped: null };
  const writeContext = { at: now, actor: MAINTENANCE_ACTOR };
  // The run builds the index its reads go through (SQLite), once per rule; reads such as `stats` only use it.
  if (!options.everyMemory && decay.due !== 'never') await storage.maintenance.indexDecayDue?.(decay.due);
  const pages = options.everyMemory ? decayCandidatePages(storage) : duePages(storage, decay, now);
  for await (const page of pages) {
    report.checked += page.length;
    const expired: DecayCandidate[] = [];
    const changes: ImportanceChange[] = [];
    /** The memories read as decayed, and which write of theirs must land for them to be counted. */
    const decayed: Array<{ id: number; writes: 'change' | 'rest' | null }> = [];
    for (const memory of page) {
      const step = decay.step(memory, memory.decayedAt, now);
      const changed = step.change !== null && decay.changeReason !== undefined;
      if (step.isDecayed) decayed.push({ id: memory.id, writes: changed ? 'change' : step.isExpired ? 'rest' : null });
      // Each write applies only to a memory still as read here (attack 31c): a retrieval, an edit or a pin of
      // another request or process since is not overruled; a memory both stepped and expired is as its change left it.
      if (step.change) changes.push({ id: memory.id, ...step.change, read: memory });
      if (step.isExpired) expired.push(changed ? { ...memory, ...step.change } : memory);
    }
    const applied = decay.changeReason
      ? await storage.maintenance.applyImportanceChanges(changes, { ...writeContext, reason: decay.changeReason })
      : [];
    const archiveReason = decay.archiveReason ?? `decay: ${policy.decay}`;
    // Decay puts memories to rest, it does not lose them: they stay findable (ADR 9).
    const rested = await storage.maintenance.putToRest(expired, { ...writeContext, reason: archiveReason });
    report.archived += rested.length;
    // A memory whose write was refused (retrieved, edited or pinned since the read) did not decay: the next run judges it.
    const landed = { change: new Set(applied), rest: new Set(rested) };
    report.decayed += decayed.filter(({ id, writes }) => writes === null || landed[writes].has(id)).length;
  }
  await storage.maintenanceState.set(ALL_CHANNELS, 'decay', { lastRunAt: now });
  return report;
}

/** The active, unpinned memories decay reads, a page of 500 at a time, by id. */
export async function* decayCandidatePages(storage: Pick<Storage, 'maintenance'>): AsyncGenerator<DecayCandidate[]> {
  let afterId = 0;
  for (;;) {
    const page = await storage.maintenance.decayCandidates(afterId, PAGE_SIZE);
    if (page.length === 0) return;
    afterId = page.at(-1)?.id ?? afterId;
    yield page;
  }
}

/**
 * The active, unpinned memories due under `policy`'s rule at or before `until` (none under a policy whose
 * step never does anything): every memory whose `step` at `until` or before would store or archive.
 */
export function duePages(
  storage: Pick<Storage, 'maintenance'>,
  policy: Pick<DecayPolicy, 'due'>,
  until: number,
): AsyncGenerator<DecayCandidate[]> {
  return policy.due === 'never' ? noPages() : dueCandidatePages(storage, policy.due, until);
}

/**
 * The active, unpinned memories due under `rule` at `now`, a page of 500 at a time by due time then id,
 * each once: a memory this run changes moves its due time past `now` (its step is applied up to now),
 * and one archived leaves the read.
 */
async function* dueCandidatePages(
  storage: Pick<Storage, 'maintenance'>,
  rule: DecayDueRule,
  now: number,
): AsyncGenerator<DecayCandidate[]> {
  let after: DecayCursor | null = null;
  for (;;) {
    const page = await storage.maintenance.dueForDecay(rule, now, after, PAGE_SIZE);
    const last = page.at(-1);
    if (!last) return;
    after = { due: last.due, id: last.id };
    yield page;
  }
}

async function* noPages(): AsyncGenerator<DecayCandidate[]> {}
