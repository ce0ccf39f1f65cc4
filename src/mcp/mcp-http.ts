import { isUtf8 } from 'node:buffer';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Principal } from '../core/access.js';
import type { Mneme } from '../core/mneme.js';
import { parseInput, ViewerSchema } from '../core/schemas.js';
import type { Viewer } from '../core/types.js';
import { type BodyHold, readBodyBytes } from '../http/http-body-share.js';
import { headerText } from '../http/http-header-text.js';
import { jsonShapeProblem } from '../http/http-json-shape.js';
import { connectMcpServer, createMcpServer } from './mcp-server.js';
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
  /**
   * Who sent the request: its API key, read once the body is in (the body may come long after the headers
   * whose key let it be read, and a key revoked meanwhile must do nothing); throws for a revoked key.
   */
  authenticate(): Promise<Principal>;
  /** Largest accepted request body in bytes. */
  maxBodyBytes: number;
  /** The body's bytes, counted against its key's share as they arrive (ADR 33); 429 once the share is full. */
  hold?: BodyHold;
  /** The share's size in bytes, for the 429's message. */
  bytesPerKey?: number;
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
      return value === null ? [] : [[field, headerText(value, header)]];
    }),
  );
  const viewer = parseInput(ViewerSchema, requested, 'Mneme-* headers');
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  const body =
    declared > options.maxBodyBytes
      ? 'too large'
      : await readBodyBytes(request.body, options.maxBodyBytes, options.hold);
  if (body === 'too large') {
    return jsonRpcError(413, `Payload Too Large: Request body must not exceed ${options.maxBodyBytes} bytes`);
  }
  if (body === 'over share') {
    return jsonRpcError(
      429,
      `Too Many Requests: this key is already sending ${options.bytesPerKey} bytes of request bodies; send this once its other requests are answered`,
      { 'Retry-After': '1' },
    );
  }
  // As the API's bodies: bytes that are not UTF-8 are refused, not decoded into replacement characters a memory keeps.
  if (!isUtf8(body)) {
    return jsonRpcError(400, 'Parse error: the body is not valid UTF-8; send JSON encoded as UTF-8', {}, PARSE_ERROR);
  }
  const shape = jsonShapeProblem(body);
  if (shape) return jsonRpcError(413, `Payload Too Large: ${shape}`);
  const session = httpSession(options.mneme, await options.authenticate(), viewer);
  const server = createMcpServer({ session, ...(options.logError ? { logError: options.logError } : {}) });
  // No session id: stateless, so every request is authenticated on its own (a revoked key stops at once).
  const transport = new WebStandardStreamableHTTPServerTransport({
    enableJsonResponse: true,
    maxRequestBodySize: options.maxBodyBytes,
  });
  await connectMcpServer(server, transport);
  try {
    return await transport.handleRequest(new Request(request.url, { method: 'POST', headers: request.headers, body }));
  } finally {
    await server.close();
  }
}

/** What a stateless server answers to GET and DELETE, so that clients do not wait on a stream. */
function methodNotAllowed(): Response {
  return jsonRpcError(405, 'Method not allowed: send MCP messages with POST', { Allow: 'POST' });
}

/** JSON-RPC's code for a body that cannot be read as JSON. */
const PARSE_ERROR = -32700;

/** A JSON-RPC error answered before any MCP message is read, as the SDK's transport answers its own. */
function jsonRpcError(status: number, message: string, headers: Record<string, string> = {}, code = -32000): Response {
  const body = { jsonrpc: '2.0', error: { code, message }, id: null };
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', ...headers } });
}
