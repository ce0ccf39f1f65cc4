import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Command } from 'commander';
import { createMneme } from '../config/create-mneme.js';
import type { EnvironmentConfig } from '../config/load-config.js';
import { ErrorCode, errorMessage, MnemeError } from '../core/errors.js';
import { parseInput, ViewerSchema } from '../core/schemas.js';
import { connectMcpServer, createMcpServer } from '../mcp/mcp-server.js';
import { stdioSession } from '../mcp/mcp-session.js';
import { defined } from './cli-arguments.js';
import type { CliIo } from './cli-io.js';
import { utf8Lines } from './utf8-lines.js';

/**
 * `mneme mcp`: an MCP server on stdin/stdout for a host that starts mneme as a child process. The
 * viewer comes from the flags (or MNEME_USER, MNEME_CHANNEL, MNEME_PROJECT, MNEME_TOPIC), never from
 * the model. It stops when the host closes stdin, or on SIGTERM/SIGINT; stdout carries only the protocol.
 */
export function registerMcpCommands(program: Command, io: CliIo, config: EnvironmentConfig): void {
  program
    .command('mcp')
    .description('run an MCP server over stdio (for agent hosts); the viewer comes from the flags or MNEME_USER...')
    .option('--user <id>', 'act as this user, with its rights (MNEME_USER); left out: the administrator')
    .option('--channel <id>', 'the channel the conversation happens in (MNEME_CHANNEL)')
    .option('--project <id>', 'the project (MNEME_PROJECT)')
    .option('--topic <id>', 'the topic, a conversation session (MNEME_TOPIC)')
    .action(async (options: { user?: string; channel?: string; project?: string; topic?: string }) => {
      if (options.user === undefined && config.mcpViewer.userId === '') {
        throw new MnemeError(
          ErrorCode.InvalidInput,
          'MNEME_USER is set but blank: give it a user id (or --user), or unset it for an administrator session',
        );
      }
      const viewer = parseInput(
        ViewerSchema,
        {
          ...config.mcpViewer,
          ...defined({
            userId: options.user,
            channelId: options.channel,
            projectId: options.project,
            topicId: options.topic,
          }),
        },
        'viewer (--user, --channel, --project, --topic)',
      );
      const path = program.opts<{ db?: string }>().db ?? config.databasePath;
      const mneme = await createMneme({
        path,
        // A session on a file it may not write would refuse every memory it is told: it does not start.
        writable: true,
        embedder: config.providers.embedder,
        chat: config.providers.chat,
        providers: config.providers,
        logger: { warn: (message) => io.stderr(`mneme: ${message}\n`) },
      });
      // The protocol's lines that are UTF-8 (a line that is not is refused as the HTTP face refuses such a body: a
      // parse error, never a memory storing U+FFFD for its bytes).
      const stdin = (io.stdin ?? process.stdin).pipe(
        utf8Lines((line) => {
          io.stderr(`mneme: ignored MCP message line ${line}: it is not UTF-8; send JSON encoded as UTF-8\n`);
          process.stdout.write(
            `${JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: `Parse error: line ${line} is not valid UTF-8; send JSON encoded as UTF-8` }, id: null })}\n`,
          );
        }),
      );
      const logError = (error: unknown) =>
        io.stderr(`mneme: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      const server = createMcpServer({ session: stdioSession(mneme, viewer), logError });
      let stopped: (reason: string) => void = () => {};
      const stop = new Promise<string>((resolve) => {
        stopped = resolve;
      });
      const onSignal = (signal: NodeJS.Signals) => stopped(signal);
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
      stdin.once('end', () => stopped('end of input'));
      try {
        const transport = new StdioServerTransport(stdin, process.stdout);
        transport.onerror = (error) => io.stderr(`mneme: ignored a malformed MCP message: ${errorMessage(error)}\n`);
        transport.onclose = () => stopped('transport closed');
        await connectMcpServer(server, transport);
        io.stderr(`mneme: MCP server on stdio (database ${path})\n`);
        await stop;
      } finally {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
        await server.close().catch(() => {});
        await mneme.close();
      }
    });
}
