import type { Command } from 'commander';
import type { Mneme } from '../core/mneme.js';
import type { Message } from '../storage/message-store.js';
import { defined, wholeNumberOption } from './cli-arguments.js';
import type { WithEngine } from './cli-io.js';

/** turns: turn memory, a channel's last messages. */
export function registerTurnsCommands(program: Command, withEngine: WithEngine): void {
  program
    .command('turns')
    .description("show a channel's last messages, oldest first (turn memory)")
    .requiredOption('--channel <id>', 'channel id')
    .addOption(wholeNumberOption('--count <n>', 'how many (1 to 50; default 10, the policy ingest.turns)', 1, 50))
    .action(
      withEngine(
        (mneme, options: { channel: string; count?: number }) =>
          mneme.turns({
            channelId: options.channel,
            ...defined({ count: options.count }),
          } as Parameters<Mneme['turns']>[0]),
        formatTurns,
      ),
    );
}

/** One line per message: time, sender, role and content (its line breaks shown as spaces; --json keeps them). */
function formatTurns(messages: readonly Message[]): string {
  if (messages.length === 0) return 'no messages';
  return messages
    .map((message) => `${message.createdAt} ${message.senderId} (${message.role}): ${oneLine(message.content)}`)
    .join('\n');
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n\u2028\u2029]+\s*/gu, ' ');
}
