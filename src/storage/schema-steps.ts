import { ErrorCode, MnemeError } from '../core/errors.js';

/** A step of a store's schema: as its migrations define it, or as `schema_migrations` recorded it when applied. */
export interface SchemaStep {
  version: number;
  name: string;
}

/**
 * The schema version of a database whose `schema_migrations` holds `recorded`, checked against this mneme's `steps`:
 * refuses (STORE_INCOMPATIBLE, touching nothing) a database of a newer schema, and one whose steps up to its version
 * are not this mneme's, each by its number and name. Builds of mneme on branches numbered their steps each on its
 * own, and the merges renumbered them (SQLite's step 24 was three different steps on the main line): a database one
 * of them migrated records a step under a number this mneme gives another step, which a check of the highest number
 * alone took as applied, leaving this mneme's own step out (PostgreSQL: `relation "memory_words" does not exist` at
 * every search) or failing on a table its renumbered step had made.
 */
export function checkRecordedSteps(recorded: readonly SchemaStep[], steps: readonly SchemaStep[]): number {
  const latest = steps.at(-1)?.version ?? 0;
  const current = recorded.reduce((highest, step) => Math.max(highest, step.version), 0);
  if (current > latest) {
    throw new MnemeError(
      ErrorCode.StoreIncompatible,
      `this database has schema version ${current}, but this mneme knows only up to ${latest}: upgrade mneme to open it`,
    );
  }
  const names = new Map(recorded.map((step) => [step.version, step.name]));
  const remedy =
    'a build of mneme that numbered its schema steps otherwise wrote it, and this one would leave its own step out; ' +
    'open it with that build, export it (mneme export) and import the file into a new database with this one';
  for (const step of steps) {
    if (step.version > current) break;
    const theirs = names.get(step.version);
    if (theirs === step.name) continue;
    throw new MnemeError(
      ErrorCode.StoreIncompatible,
      theirs === undefined
        ? `this database has no schema step ${step.version} ("${step.name}") below its step ${current}: ${remedy}`
        : `this database's schema step ${step.version} is "${theirs}", where this mneme's is "${step.name}": ${remedy}`,
    );
  }
  return current;
}
