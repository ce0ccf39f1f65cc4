import type { Command } from 'commander';
import type { EnvironmentConfig } from '../config/load-config.js';
import { checkUpstreamHeaders, PROXY_PORT, startProxyServer, upstreamUrl } from '../proxy/proxy-server.js';
import { wholeNumberOption } from './cli-arguments.js';
import type { CliIo } from './cli-io.js';
import { connectionsPerAddressOption } from './serve-commands.js';
import { runService } from './service-lifecycle.js';

/** `mneme proxy`: the OpenAI-compatible proxy that gives any chat client memory (ADR 18). */
export function registerProxyCommands(program: Command, io: CliIo, config: EnvironmentConfig): void {
  program
    .command('proxy')
    .description(
      'answer POST /v1/chat/completions and GET /v1/models by forwarding to an OpenAI-compatible upstream, with memory: recall before, ingest after',
    )
    .requiredOption(
      '--upstream <url>',
      "the upstream's base URL, /v1 included, as OpenAI's baseURL (e.g. http://127.0.0.1:11434/v1 for Ollama); its key from MNEME_UPSTREAM_API_KEY",
    )
    .option('--host <address>', 'address to bind (default 127.0.0.1; others need an API key)')
    .addOption(wholeNumberOption('--port <port>', `port (default ${PROXY_PORT}; 0 picks a free one)`, 0, 65_535))
    .addOption(connectionsPerAddressOption())
    .option('--quiet', 'no access log (one line per request on stderr: time, method, path, status, milliseconds)')
    .addHelpText(
      'after',
      `
Clients send an mneme API key (Authorization: Bearer <key>): a key bound to a user recalls and
remembers for that user; an administrator key (or a database without keys, loopback only) for the
request body's "user" field. The exchange goes to the channel named by the X-Mneme-Channel header,
or proxy:<user id>. The client's key is never sent upstream; MNEME_UPSTREAM_API_KEY is.`,
    )
    .action(
      async (options: {
        upstream: string;
        host?: string;
        port?: number;
        quiet?: boolean;
        connectionsPerAddress?: number;
      }) => {
        const globals = program.opts<{ db?: string }>();
        const upstream = upstreamUrl(options.upstream);
        checkUpstreamHeaders(config);
        const { port } = options;
        await runService(io, config, globals.db ?? config.databasePath, {
          listen: (mneme) =>
            startProxyServer({
              mneme,
              upstream,
              ...(config.upstreamApiKey ? { upstreamApiKey: config.upstreamApiKey } : {}),
              ...(config.upstreamOrganization ? { upstreamOrganization: config.upstreamOrganization } : {}),
              ...(config.upstreamProject ? { upstreamProject: config.upstreamProject } : {}),
              ...(options.host ? { host: options.host } : {}),
              ...(port === undefined ? {} : { port }),
              ...(options.connectionsPerAddress === undefined
                ? {}
                : { connectionsPerAddress: options.connectionsPerAddress }),
              log: (line) => io.stderr(`mneme: ${line}\n`),
              ...(options.quiet ? {} : { accessLog: (line: string) => io.stderr(`mneme: ${line}\n`) }),
            }),
          listening: (url, setting) =>
            `mneme proxy listening on ${url}, forwarding to ${upstream}${config.upstreamApiKey ? ' with MNEME_UPSTREAM_API_KEY' : ' without a key (MNEME_UPSTREAM_API_KEY is unset)'} (${setting})`,
        });
      },
    );
}
