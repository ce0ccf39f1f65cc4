import { ErrorCode, MnemeError } from '../core/errors.js';
import type { Mneme } from '../core/mneme.js';
import { HTTP_CLOSE_GRACE_MS, listenHttp, type RunningHttpServer, refuseOpenNetwork } from '../http/http-server.js';
import { createProxyApp, type ProxyAppOptions } from './proxy-app.js';

export interface ProxyServerOptions extends ProxyAppOptions {
  mneme: Mneme;
  /** 127.0.0.1 unless told; any other address needs at least one API key (as `mneme serve`). */
  host?: string;
  /** 7371 unless told; 0 picks a free port. */
  port?: number;
  /** Connections one client address may hold open at once (as `mneme serve`). */
  connectionsPerAddress?: number;
}

/** A running proxy: a server, and a way to wait for the exchanges it is still ingesting. */
export interface RunningProxyServer extends RunningHttpServer {
  /** Resolves once every exchange handed to ingest so far has been written (or has failed and been logged). */
  whenIdle(): Promise<void>;
}

/** The default port of `mneme proxy` (`mneme serve` has 7370). */
export const PROXY_PORT = 7371;

/**
 * Starts the OpenAI-compatible proxy (ADR 18). `close` stops accepting requests, waits for those in
 * flight (as `mneme serve`), then for the exchanges still being ingested; the engine stays open.
 */
export async function startProxyServer(options: ProxyServerOptions): Promise<RunningProxyServer> {
  const host = options.host ?? '127.0.0.1';
  const upstream = upstreamUrl(options.upstream);
  checkUpstreamHeaders(options);
  await refuseOpenNetwork(host, options.mneme);
  const proxy = createProxyApp({ ...options, upstream });
  const server = await listenHttp(
    proxy.app.fetch,
    host,
    options.port ?? PROXY_PORT,
    options.connectionsPerAddress,
    options.accessLog,
  );
  return {
    url: server.url,
    async close(graceMs = HTTP_CLOSE_GRACE_MS) {
      await server.close(graceMs);
      await proxy.whenIdle();
    },
    whenIdle: () => proxy.whenIdle(),
  };
}

/**
 * CONFIG_INVALID for a value of `MNEME_UPSTREAM_*` that cannot travel in a header (a space, a line break, a letter
 * outside ASCII), where every request would fail upstream; the message names the variable, never the value.
 */
export function checkUpstreamHeaders(
  options: Pick<ProxyAppOptions, 'upstreamApiKey' | 'upstreamOrganization' | 'upstreamProject'>,
): void {
  const values = {
    MNEME_UPSTREAM_API_KEY: options.upstreamApiKey,
    MNEME_UPSTREAM_ORGANIZATION: options.upstreamOrganization,
    MNEME_UPSTREAM_PROJECT: options.upstreamProject,
  };
  for (const [variable, value] of Object.entries(values)) {
    if (value && !/^[\x21-\x7e]+$/.test(value)) {
      throw new MnemeError(
        ErrorCode.ConfigInvalid,
        `${variable} must be printable ASCII without spaces (it is sent in a header); check its value`,
      );
    }
  }
}

/** The upstream's base URL without a trailing slash; CONFIG_INVALID unless it is http(s). */
export function upstreamUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `--upstream must be a URL such as http://127.0.0.1:11434/v1, not ${JSON.stringify(text)}`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new MnemeError(ErrorCode.ConfigInvalid, `--upstream must be an http or https URL, not ${url.protocol}`);
  }
  if (url.username || url.password) {
    // fetch refuses such a URL, and every error naming the upstream would show the password to clients.
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      '--upstream must not carry a user name or password: put the key in MNEME_UPSTREAM_API_KEY',
    );
  }
  if (url.search || url.hash) {
    throw new MnemeError(ErrorCode.ConfigInvalid, '--upstream is a base URL: leave out the query string and fragment');
  }
  return url.href.replace(/\/+$/, '');
}
