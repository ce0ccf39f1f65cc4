import { z } from 'zod';
import { parseInput } from './schemas.js';

/**
 * The policies that differ between the memory systems mneme unifies: one engine, configured.
 * Each section belongs to the part of the engine that reads it; every field has a default.
 */
export const PolicySchema = z.strictObject({
  /** Which signal decays and is reinforced: Ebbinghaus strength, salience, or importance steps. */
  decay: z.enum(['ebbinghaus', 'salience', 'importance-steps']).default('ebbinghaus'),
});

export type MnemePolicy = z.output<typeof PolicySchema>;
/** What a user may pass: any subset of the policy. */
export type PolicyOptions = z.input<typeof PolicySchema>;

/** The policy with every default filled in, or an INVALID_INPUT error naming the bad fields. */
export function resolvePolicy(options: PolicyOptions = {}): MnemePolicy {
  return parseInput(PolicySchema, options, 'policy');
}
