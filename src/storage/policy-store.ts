/** One version of a database's policy: its preset and the settings changed on top of it. */
export interface PolicyVersion {
  /** 1 for the policy the database was created with, then one more per change. */
  version: number;
  /** The preset's name. */
  preset: string;
  /** The settings that differ from the preset, nested as in the policy. */
  overrides: Record<string, unknown>;
  /** What changed, in words. */
  change: string;
  /** Who changed it, or null. */
  actor: string | null;
  createdAt: string;
}

/** The policy a database is run under, kept with its history. */
export interface PolicyStore {
  /** The newest version, or null for a database that has none yet (new, or from before presets). */
  current(): Promise<PolicyVersion | null>;
  /** Every version, oldest first. */
  history(): Promise<PolicyVersion[]>;
  /**
   * Stores `next` as the newest version, unless a version with its number exists already (another
   * process changed the policy first): then nothing is written and the answer is false.
   */
  append(next: Omit<PolicyVersion, 'createdAt'>, at: number): Promise<boolean>;
  /**
   * Replaces version 1 by `first`, only while it is the only version and the database holds no memory
   * and no message (nothing was made under it); false otherwise.
   */
  replaceUnusedFirst(first: Omit<PolicyVersion, 'createdAt'>, at: number): Promise<boolean>;
}
