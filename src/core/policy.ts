import { z } from 'zod';
import { decayPolicyNames } from './decay/decay.js';
import { IngestPolicySchema } from './ingest/ingest-policy.js';
import { maintenanceTasks } from './maintenance/maintenance-task.js';
import { ContextPolicySchema, RecallPolicySchema } from './recall/recall-policy.js';
import { parseInput } from './schemas.js';

/**
 * The policies that differ between the memory systems mneme unifies: one engine, configured.
 * Each section belongs to the part of the engine that reads it; every field has a default.
 */
export const PolicySchema = z.strictObject({
  /** Which signal decays and is reinforced: Ebbinghaus strength, salience, importance steps, or recency-only (nothing stored or archived; core/decay/). */
  decay: z.enum(decayPolicyNames).default('ebbinghaus'),
  /** How recall finds, scores and expands hits (core/recall-policy.ts). */
  recall: RecallPolicySchema.prefault({}),
  /** How the context block is formatted and how many words it may hold. */
  context: ContextPolicySchema.prefault({}),
  /** How messages become memories: extraction, exchange chunks, triggers, turn memory (core/ingest-policy.ts). */
  ingest: IngestPolicySchema.prefault({}),
  /** Which background tasks run in this database. */
  maintenance: z
    .strictObject({
      /**
       * The tasks `maintain()` and the scheduler run; a task left out is reported skipped, also when
       * asked for by name. All of them by default.
       */
      tasks: z
        .array(
          z.enum(maintenanceTasks, { error: () => `a maintenance task is one of ${maintenanceTasks.join(', ')}` }),
          { error: 'maintenance.tasks must be a list of task names' },
        )
        .refine((tasks) => new Set(tasks).size === tasks.length, 'maintenance.tasks names a task twice')
        // In cycle order, whatever order they were given in: the order they run in.
        .overwrite((tasks) => maintenanceTasks.filter((task) => tasks.includes(task)))
        .default([...maintenanceTasks]),
    })
    .prefault({}),
});

export type MnemePolicy = z.output<typeof PolicySchema>;
/** What a user may pass: any subset of the policy. */
export type PolicyOptions = z.input<typeof PolicySchema>;

/** The policy with every default filled in, or an INVALID_INPUT error naming the bad fields. */
export function resolvePolicy(options: PolicyOptions = {}): MnemePolicy {
  return parseInput(PolicySchema, options, 'policy');
}
