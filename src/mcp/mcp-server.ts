import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  type JSONRPCMessage,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode as McpErrorCode,
  PingRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { errorMessage, isMnemeError } from '../core/errors.js';
import { clipChars, MemoryIdSchema, parseInput } from '../core/schemas.js';
import type { McpSession } from './mcp-session.js';
import { mcpTools } from './mcp-tools.js';

/** The MCP error code of a resource that does not exist (or that the session may not see). */
const RESOURCE_NOT_FOUND = -32002;

/** How many of the newest memories `resources/list` names. */
const LISTED_RESOURCES = 50;

export interface McpServerOptions {
  session: McpSession;
  /** Where unexpected errors are logged (the client is told only that one happened). */
  logError?: (error: unknown) => void;
}

/**
 * The MCP face for one session: the tools (remember, recall, context, forget, update, list, history,
 * ingest_exchange, stats) and the resource `memory://{id}`. A tool's failure is a tool error carrying
 * mneme's message and code; nothing a tool is given can stop the server.
 */
export function createMcpServer(options: McpServerOptions): McpServer {
  const { session } = options;
  const logError = options.logError ?? ((error: unknown) => console.error(error));
  const server = new McpServer(
    { name: 'mneme', version: '0.1.0' },
    {
      instructions:
        'Long-term memory. Before answering, call context with the user message (or recall to search); after replying, call ingest_exchange with the user message and your reply; use remember for what the user asks you to keep.',
    },
  );

  for (const tool of mcpTools) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.input,
        annotations: { readOnlyHint: tool.readOnly, openWorldHint: false },
      },
      async (input: unknown) => {
        try {
          const output = await tool.run(session, input as never);
          return { content: [{ type: 'text' as const, text: output.text }], structuredContent: output.structured };
        } catch (error) {
          if (!isMnemeError(error)) logError(error);
          const code = isMnemeError(error) ? error.code : 'UNEXPECTED';
          const message = isMnemeError(error) ? error.message : `unexpected error: ${errorMessage(error)}`;
          return {
            isError: true,
            content: [{ type: 'text' as const, text: `${code}: ${message}` }],
            structuredContent: { error: { code, message, ...(isMnemeError(error) ? { issues: error.issues } : {}) } },
          };
        }
      },
    );
  }

  server.registerResource(
    'memory',
    new ResourceTemplate('memory://{id}', {
      list: async () => {
        const page = await session.mneme
          .list({ viewer: session.viewer, limit: LISTED_RESOURCES })
          .catch((error: unknown) => resourceError(error));
        return {
          resources: page.memories.map((memory) => ({
            uri: `memory://${memory.id}`,
            name: `memory ${memory.id}`,
            description: clipChars(memory.content, 200),
            mimeType: 'application/json',
          })),
        };
      },
    }),
    {
      title: 'A memory',
      description: 'One memory the session may see, as JSON: content, scope, category, importance, times',
      mimeType: 'application/json',
    },
    async (uri, variables) => {
      try {
        const id = parseInput(MemoryIdSchema, variables.id, 'memory id');
        const memory = await session.mneme.get({ id, viewer: session.viewer });
        return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(memory, null, 2) }] };
      } catch (error) {
        return resourceError(error);
      }
    },
  );
  return server;

  /**
   * A failed resource request as an MCP error: mneme's refusals (a viewer the key may not use, a bad id) carry its
   * code, a memory the session may not see is "resource not found"; anything else is logged and an internal error.
   */
  function resourceError(error: unknown): never {
    if (!isMnemeError(error)) {
      logError(error);
      throw new McpError(McpErrorCode.InternalError, `unexpected error: ${errorMessage(error)}`);
    }
    const code = error.code === 'NOT_FOUND' ? RESOURCE_NOT_FOUND : McpErrorCode.InvalidParams;
    throw new McpError(code, error.message, { code: error.code });
  }
}

/** The requests the server answers, each with the SDK's schema of it. */
const requestSchemas: ReadonlyMap<string, z.ZodType> = new Map<string, z.ZodType>([
  ['initialize', InitializeRequestSchema],
  ['ping', PingRequestSchema],
  ['tools/list', ListToolsRequestSchema],
  ['tools/call', CallToolRequestSchema],
  ['resources/list', ListResourcesRequestSchema],
  ['resources/templates/list', ListResourceTemplatesRequestSchema],
  ['resources/read', ReadResourceRequestSchema],
]);

/**
 * Connects `server` to `transport`. A request the server answers whose params are malformed (`tools/call` without a
 * tool name, `resources/read` with a number for its URI) is refused with JSON-RPC's invalid params and a line naming
 * the field, and never reaches the SDK, which would answer "internal error" with zod's issues as its message.
 */
export async function connectMcpServer(server: McpServer, transport: Transport): Promise<void> {
  await server.connect(transport);
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const refusal = malformedRequest(message);
    if (refusal === null) {
      deliver?.(message, extra);
      return;
    }
    transport.send(refusal).catch((error: unknown) => transport.onerror?.(error as Error));
  };
}

/** The invalid-params answer to `message` when it is a request the server answers with malformed params; else null. */
function malformedRequest(message: JSONRPCMessage): JSONRPCMessage | null {
  if (!('method' in message) || !('id' in message)) return null;
  const schema = requestSchemas.get(message.method);
  if (schema === undefined) return null;
  try {
    parseInput(schema, message, `${message.method} request`);
    return null;
  } catch (error) {
    return {
      jsonrpc: '2.0',
      id: message.id,
      error: { code: McpErrorCode.InvalidParams, message: errorMessage(error) },
    };
  }
}
