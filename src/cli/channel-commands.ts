import { type Command, Option } from 'commander';
import { ErrorCode, MnemeError } from '../core/errors.js';
import type { ChannelSummary } from '../core/inspection.js';
import type { Channel } from '../storage/membership-store.js';
import { choiceOption, defined, idList } from './cli-arguments.js';
import type { WithEngine } from './cli-io.js';

/** channels list (the default), channels put, channels get: the channels, and who may read one (ADR 5). */
export function registerChannelCommands(program: Command, withEngine: WithEngine): void {
  const channels = program.command('channels').description('list channels, or show or declare who may read one');
  channels
    .command('list', { isDefault: true })
    .description(
      'the channels with messages (with --as, those the user may read): visibility and extraction progress (the default)',
    )
    .action(withEngine((mneme) => mneme.channels(), formatChannelList));
  // `--members ''` (an unset variable) would remove every member: it is refused, and `--no-members` says so on purpose.
  const given = new Set<string>();
  const put = channels
    .command('put')
    .description('declare a channel: its visibility and, when given, its members (replacing them)')
    .argument('<id>', 'channel id')
    .addOption(
      choiceOption(
        '--visibility <visibility>',
        'who may read it (left out: a declared channel keeps its own, a new one is private)',
        ['direct', 'private', 'public'],
      ),
    )
    .addOption(
      new Option('--members <ids>', 'comma-separated user ids: the members from now on').argParser(
        idList('to remove every member, give --no-members'),
      ),
    )
    .option('--no-members', 'remove every member')
    .on('option:members', () => given.add('--members'))
    .on('option:no-members', () => given.add('--no-members'))
    .hook('preAction', () => {
      if (given.size > 1) {
        throw new MnemeError(ErrorCode.InvalidInput, 'give either --members <ids> or --no-members, not both');
      }
    });
  put.action(
    withEngine(
      (mneme, id: string, options: { visibility?: string; members?: string[] | false }) =>
        mneme.putChannel({
          id,
          ...defined({
            visibility: options.visibility as 'direct' | 'private' | 'public' | undefined,
            members: options.members === false ? [] : options.members,
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

function formatChannelList(channels: ChannelSummary[]): string {
  if (channels.length === 0) return 'no channels with messages';
  return channels
    .map(
      (channel) =>
        `${channel.id} (${channel.visibility}): latest message #${channel.latestMessageId}, extracted through #${channel.extractedThrough}`,
    )
    .join('\n');
}

function formatChannel(channel: Channel): string {
  const members = channel.members.length === 0 ? 'no members' : channel.members.join(', ');
  return `${channel.id} (${channel.visibility}): ${members}`;
}
