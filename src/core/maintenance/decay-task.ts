import type { ImportanceChange } from '../../storage/maintenance-store.js';
import {
  currentSalience,
  IMPORTANCE_EXPIRY_DAYS,
  IMPORTANCE_STEP_DAYS,
  IMPORTANCE_STEPS,
  importanceDecay,
  importanceStep,
  RETENTION_ARCHIVE_BELOW,
  retention,
  SALIENCE_REMOVE_BELOW,
} from '../decay/decay.js';
import type { EngineContext } from '../engine-context.js';
import type { MnemePolicy } from '../policy.js';
import { archiveEach } from './archive-each.js';
import { ALL_CHANNELS, MAINTENANCE_ACTOR, type TaskReport } from './maintenance-task.js';

/** Memories decay reads per page. */
const PAGE_SIZE = 500;

/** What one decay run did. */
export interface DecayReport extends TaskReport {
  policy: MnemePolicy['decay'];
  /** Active, unpinned memories looked at. */
  checked: number;
  /** Of those, how many have a signal below its stored value now (importance steps: how many were downgraded). */
  decayed: number;
  /** How many fell below the line and were archived. */
  archived: number;
}

const archiveReasons: Record<MnemePolicy['decay'], string> = {
  ebbinghaus: `decay: Ebbinghaus retention fell below ${RETENTION_ARCHIVE_BELOW.toFixed(2)}`,
  salience: `decay: salience fell below ${SALIENCE_REMOVE_BELOW}`,
  'importance-steps': `decay: importance 0 for ${IMPORTANCE_EXPIRY_DAYS} days without a retrieval`,
};

/**
 * Applies the engine's decay policy at `now` to every active, unpinned memory, a page at a time.
 * Ebbinghaus retention and salience are computed from the time since the last retrieval (nothing
 * is written until a memory falls below its line and is archived); importance steps are written
 * with the time they are applied up to. Either way a missed run is caught up exactly.
 */
export async function runDecay(context: EngineContext, now: number): Promise<DecayReport> {
  const { policy, storage } = context;
  const report: DecayReport = { policy: policy.decay, checked: 0, decayed: 0, archived: 0, skipped: null };
  const writeContext = { at: now, actor: MAINTENANCE_ACTOR };
  let afterId = 0;
  for (;;) {
    const page = await storage.maintenance.decayCandidates(afterId, PAGE_SIZE);
    if (page.length === 0) break;
    afterId = page.at(-1)?.id ?? afterId;
    report.checked += page.length;
    const expired: number[] = [];
    const downgrades: ImportanceChange[] = [];
    for (const memory of page) {
      switch (policy.decay) {
        case 'ebbinghaus': {
          const value = retention(memory, now);
          if (value < memory.strength) report.decayed++;
          if (value < RETENTION_ARCHIVE_BELOW) expired.push(memory.id);
          break;
        }
        case 'salience': {
          const value = currentSalience(memory, now);
          if (value < memory.salience) report.decayed++;
          if (value < SALIENCE_REMOVE_BELOW) expired.push(memory.id);
          break;
        }
        case 'importance-steps': {
          const state = importanceDecay(memory, memory.decayedAt, now);
          if (state.decayedAt !== null && state.decayedAt !== memory.decayedAt) {
            downgrades.push({ id: memory.id, importance: state.step / IMPORTANCE_STEPS, decayedAt: state.decayedAt });
          }
          if (state.step < importanceStep(memory.importance)) report.decayed++;
          if (state.isExpired) expired.push(memory.id);
          break;
        }
      }
    }
    await storage.maintenance.applyImportanceChanges(downgrades, {
      ...writeContext,
      reason: `decay: importance steps, one step down per ${IMPORTANCE_STEP_DAYS} days without a retrieval`,
    });
    report.archived += await archiveEach(context, expired, { ...writeContext, reason: archiveReasons[policy.decay] });
  }
  await storage.maintenanceState.set(ALL_CHANNELS, 'decay', { lastRunAt: now });
  return report;
}
