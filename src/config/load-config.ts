import { type ProviderSettings, readProviderSettings } from './providers.js';

/** Settings read from the environment. This is the only module that reads `process.env`. */
export interface EnvironmentConfig {
  /** `MNEME_DB`: the database file or URL (`postgres://...`, `pglite:...`), `./data/mneme.db` when unset. */
  databasePath: string;
  /** `MNEME_EMBEDDER` (default `auto`), `MNEME_CHAT` (default `none`), provider URLs, key and model folders. */
  providers: ProviderSettings;
  /**
   * `MNEME_USER`, `MNEME_CHANNEL`, `MNEME_PROJECT`, `MNEME_TOPIC`: the viewer of `mneme mcp` when its
   * flags leave them out (unset or blank: none), but for a `MNEME_USER` set blank, kept as `''` for `mcp`
   * to refuse: without a user the session is the administrator's.
   */
  mcpViewer: { userId?: string; channelId?: string; projectId?: string; topicId?: string };
  /**
   * `MNEME_UPSTREAM_API_KEY`: the key `mneme proxy` sends its upstream (`Authorization: Bearer`); unset or
   * blank: none (Ollama, a local server). An environment variable, so it never shows in `ps`.
   */
  upstreamApiKey?: string;
  /**
   * `MNEME_UPSTREAM_ORGANIZATION`, `MNEME_UPSTREAM_PROJECT`: sent by `mneme proxy` as `OpenAI-Organization` and
   * `OpenAI-Project`, which pick the account of the upstream key that pays; unset or blank: none (the key's default).
   */
  upstreamOrganization?: string;
  upstreamProject?: string;
}

export function loadConfig(environment: NodeJS.ProcessEnv = process.env): EnvironmentConfig {
  const databasePath = environment.MNEME_DB?.trim();
  const upstreamApiKey = environment.MNEME_UPSTREAM_API_KEY?.trim();
  const upstreamOrganization = environment.MNEME_UPSTREAM_ORGANIZATION?.trim();
  const upstreamProject = environment.MNEME_UPSTREAM_PROJECT?.trim();
  return {
    databasePath: databasePath ? databasePath : './data/mneme.db',
    providers: readProviderSettings(environment),
    mcpViewer: {
      ...(environment.MNEME_USER === undefined ? {} : { userId: environment.MNEME_USER.trim() }),
      ...nonBlank({
        channelId: environment.MNEME_CHANNEL,
        projectId: environment.MNEME_PROJECT,
        topicId: environment.MNEME_TOPIC,
      }),
    },
    ...(upstreamApiKey ? { upstreamApiKey } : {}),
    ...(upstreamOrganization ? { upstreamOrganization } : {}),
    ...(upstreamProject ? { upstreamProject } : {}),
  };
}

/** The entries whose value has text. */
function nonBlank(values: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values).filter((entry): entry is [string, string] => (entry[1]?.trim() ?? '') !== ''),
  );
}
