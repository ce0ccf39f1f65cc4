import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpError, ErrorCode as McpErrorCode } from '@modelcontextprotocol/sdk/types.js';
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
