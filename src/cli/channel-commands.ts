import type { Command } from 'commander';
import type { Channel } from '../storage/membership-store.js';
import { choiceOption, defined } from './cli-arguments.js';
import type { WithEngine } from './cli-io.js';

/** channels put, channels get: who may read a channel (ADR 5). */
export function registerChannelCommands(program: Command, withEngine: WithEngine): void {
  const channels = program.command('channels').description('channel visibility and members');
  channels
    .command('put')
    .description('declare a channel: its visibility and, when given, its members (replacing them)')
    .argument('<id>', 'channel id')
    .addOption(
      choiceOption('--visibility <visibility>', 'who may read it (default private)', ['direct', 'private', 'public']),
    )
    .option('--members <ids>', 'comma-separated user ids')
    .action(
      withEngine(
        (mneme, id: string, options: { visibility?: string; members?: string }) =>
          mneme.putChannel({
            id,
            ...defined({
              visibility: options.visibility as 'direct' | 'private' | 'public' | undefined,
              members: options.members
                ?.split(',')
                .map((member) => member.trim())
                .filter((member) => member !== ''),
            }),
          }),
        formatChannel,
      ),
    );
  channels
    .command('get')
    .description("show a channel's visibility and members")
    .argument('<id>', 'channel id')
    .action(withEngine((mneme, id: string) => mneme.channel(id), formatChannel));
}

function formatChannel(channel: Channel): string {
  const members = channel.members.length === 0 ? 'no members' : channel.members.join(', ');
  return `${channel.id} (${channel.visibility}): ${members}`;
}
