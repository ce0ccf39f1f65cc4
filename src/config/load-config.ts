import { type ProviderSettings, readProviderSettings } from './providers.js';

/** Settings read from the environment. This is the only module that reads `process.env`. */
export interface EnvironmentConfig {
  /** `MNEME_DB`: the database file, `./data/mneme.db` when unset. */
  databasePath: string;
  /** `MNEME_EMBEDDER` (default `auto`), `MNEME_CHAT` (default `none`), provider URLs, key and model folders. */
  providers: ProviderSettings;
}

export function loadConfig(environment: NodeJS.ProcessEnv = process.env): EnvironmentConfig {
  const databasePath = environment.MNEME_DB?.trim();
  return {
    databasePath: databasePath ? databasePath : './data/mneme.db',
    providers: readProviderSettings(environment),
  };
}
