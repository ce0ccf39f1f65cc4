import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Principal } from '../core/access.js';
import type { Mneme } from '../core/mneme.js';
import { parseInput, ViewerSchema } from '../core/schemas.js';
import type { Viewer } from '../core/types.js';
import { createMcpServer } from './mcp-server.js';
import { httpSession } from './mcp-session.js';

/** The request headers that name the viewer of an MCP request, by viewer field. */
export const mcpViewerHeaders = {
  userId: 'mneme-user',
  channelId: 'mneme-channel',
  projectId: 'mneme-project',
  topicId: 'mneme-topic',
} as const satisfies Record<keyof Viewer, string>;

export interface McpRequestOptions {
  mneme: Mneme;
  /** Who sent the request (its API key, already checked). */
  principal: Principal;
  /** Largest accepted request body in bytes. */
  maxBodyBytes: number;
  logError?: (error: unknown) => void;
}

/**
 * Answers one request to `/mcp` (streamable HTTP, stateless: every request carries its key and is
 * answered with JSON). The viewer comes from the `Mneme-User`, `Mneme-Channel`, `Mneme-Project` and
 * `Mneme-Topic` headers: INVALID_INPUT when one is malformed, FORBIDDEN when a user key names another user.
 * GET and DELETE are 405: a stateless server has no stream to open and no session to end.
 */
export async function handleMcpRequest(request: Request, options: McpRequestOptions): Promise<Response> {
  // Stateless: no stream for server-initiated messages (GET) and no session to end (DELETE).
  if (request.method !== 'POST') return methodNotAllowed();
  const requested = Object.fromEntries(
    Object.entries(mcpViewerHeaders).flatMap(([field, header]) => {
      const value = request.headers.get(header);
      return value === null ? [] : [[field, value]];
    }),
  );
  const viewer = parseInput(ViewerSchema, requested, 'Mneme-* headers');
  const session = httpSession(options.mneme, options.principal, viewer);
  const server = createMcpServer({ session, ...(options.logError ? { logError: options.logError } : {}) });
  // No session id: stateless, so every request is authenticated on its own (a revoked key stops at once).
  const transport = new WebStandardStreamableHTTPServerTransport({
    enableJsonResponse: true,
    maxRequestBodySize: options.maxBodyBytes,
  });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request);
  } finally {
    await server.close();
  }
}

/** What a stateless server answers to GET and DELETE, so that clients do not wait on a stream. */
function methodNotAllowed(): Response {
  const body = {
    jsonrpc: '2.0',
    error: { code: -32000, message: 'Method not allowed: send MCP messages with POST' },
    id: null,
  };
  return new Response(JSON.stringify(body), {
    status: 405,
    headers: { 'Content-Type': 'application/json', Allow: 'POST' },
  });
}
