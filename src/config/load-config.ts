/** Settings read from the environment. This is the only module that reads `process.env`. */
export interface EnvironmentConfig {
  /** `MNEME_DB`: the database file, `./mneme.db` when unset. */
  databasePath: string;
}

export function loadConfig(environment: NodeJS.ProcessEnv = process.env): EnvironmentConfig {
  const databasePath = environment.MNEME_DB?.trim();
  return { databasePath: databasePath ? databasePath : './mneme.db' };
}
