import { type Command, Option } from 'commander';
import type { Mneme } from '../core/mneme.js';
import { CLI_ACTOR } from '../core/reserved-ids.js';
import { MAX_PAGE_SIZE, ScopeSchema } from '../core/schemas.js';
import { scopeOwnerField } from '../core/scope.js';
import type { Memory, MemoryPage, MemoryStats, MemoryVersion } from '../core/types.js';
import { choiceOption, defined, finiteNumber, wholeNumberOption } from './cli-arguments.js';
import type { WithEngine } from './cli-io.js';

const scopes = ScopeSchema.options;

/** add, get, update, list, forget, restore, history, stats. */
export function registerMemoryCommands(program: Command, withEngine: WithEngine): void {
  program
    .command('add')
    .description('store a memory')
    .argument('<text>', 'what to remember')
    .addOption(
      choiceOption(
        '--scope <scope>',
        'where it belongs (default: personal with --user, room with --channel, project with --project, else global; session is refused: extraction writes it)',
        scopes,
      ),
    )
    .option('--user <id>', 'user id (personal scope)')
    .option('--channel <id>', 'channel id (room scope)')
    .option('--project <id>', 'project id (project scope)')
    .option('--topic <id>', 'topic id')
    .option('--category <label>', 'fact | preference | event | episode | general, or your own label')
    .addOption(
      new Option('--importance <0..1>', 'how much it matters (default 0.5; clamped to 0..1)').argParser(finiteNumber),
    )
    .option('--pin', 'pin it: pinned memories never decay')
    .action(
      withEngine(
        (mneme, text: string, options: Record<string, string | number | boolean | undefined>) =>
          mneme.remember({
            content: text,
            ...defined({
              scope: options.scope,
              userId: options.user,
              channelId: options.channel,
              projectId: options.project,
              topicId: options.topic,
              category: options.category,
              importance: options.importance,
              pinned: options.pin,
            }),
            actor: CLI_ACTOR,
          } as Parameters<Mneme['remember']>[0]),
        formatMemory,
      ),
    );

  program
    .command('get')
    .description('show one memory')
    .argument('<id>', 'memory id')
    .action(withEngine((mneme, id: string) => mneme.get({ id }), formatMemory));

  program
    .command('update')
    .description('edit a memory (a version is kept)')
    .argument('<id>', 'memory id')
    .option('--content <text>', 'new content')
    .option('--category <label>', 'new category')
    .addOption(new Option('--importance <0..1>', 'new importance (clamped to 0..1)').argParser(finiteNumber))
    .addOption(new Option('--pin', 'pin it').conflicts('unpin'))
    .addOption(new Option('--unpin', 'unpin it').conflicts('pin'))
    .action(
      withEngine(
        (mneme, id: string, options: Record<string, string | number | boolean | undefined>) =>
          mneme.update({
            id,
            ...defined({
              content: options.content,
              category: options.category,
              importance: options.importance,
              pinned: options.pin ? true : options.unpin ? false : undefined,
            }),
            actor: CLI_ACTOR,
          } as Parameters<Mneme['update']>[0]),
        formatMemory,
      ),
    );

  program
    .command('list')
    .description('list memories, newest first')
    .addOption(choiceOption('--scope <scope>', 'only this scope', scopes))
    .option('--user <id>', 'only this user id')
    .option('--channel <id>', 'only this channel id')
    .option('--project <id>', 'only this project id')
    .option('--topic <id>', 'only this topic id')
    .option('--category <label>', 'only this category')
    .addOption(
      choiceOption('--archived <which>', 'archived memories (default exclude)', ['exclude', 'include', 'only']),
    )
    .addOption(wholeNumberOption('--limit <n>', `page size (default 50, at most ${MAX_PAGE_SIZE})`, 1, MAX_PAGE_SIZE))
    .addOption(wholeNumberOption('--offset <n>', 'skip this many', 0))
    .action(
      withEngine(
        (mneme, options: Record<string, string | number | undefined>) =>
          mneme.list(
            defined({
              scope: options.scope,
              userId: options.user,
              channelId: options.channel,
              projectId: options.project,
              topicId: options.topic,
              category: options.category,
              archived: options.archived,
              limit: options.limit,
              offset: options.offset,
            }) as Parameters<Mneme['list']>[0],
          ),
        formatPage,
      ),
    );

  program
    .command('forget')
    .description('soft-delete a memory (it can be restored)')
    .argument('<id>', 'memory id')
    .option('--reason <text>', 'why, kept in the history')
    .action(
      withEngine(
        (mneme, id: string, options: { reason?: string }) =>
          mneme.forget({ id, actor: CLI_ACTOR, ...defined({ reason: options.reason }) }),
        (memory) => `forgot #${memory.id}`,
      ),
    );

  program
    .command('restore')
    .description('bring back a forgotten memory')
    .argument('<id>', 'memory id')
    .action(withEngine((mneme, id: string) => mneme.restore({ id, actor: CLI_ACTOR }), formatMemory));

  program
    .command('history')
    .description('every version of a memory')
    .argument('<id>', 'memory id')
    .action(withEngine((mneme, id: string) => mneme.history(id), formatHistory));

  program
    .command('stats')
    .description('totals, by scope and category, most accessed')
    .action(withEngine((mneme) => mneme.stats(), formatStats));
}

function owner(memory: Memory): string {
  const field = scopeOwnerField[memory.scope];
  return field ? `${memory.scope}:${memory[field]}` : memory.scope;
}

function formatMemory(memory: Memory): string {
  const flags = [
    `importance ${memory.importance.toFixed(2)}`,
    memory.pinned ? 'pinned' : null,
    memory.archivedAt ? `archived ${memory.archivedAt}` : null,
  ].filter(Boolean);
  return `#${memory.id} [${owner(memory)}] ${memory.category} (${flags.join(', ')})\n  ${memory.content}`;
}

function formatPage(page: MemoryPage): string {
  const lines = page.memories.map(
    (memory) =>
      `#${memory.id}\t${owner(memory)}\t${memory.category}\t${memory.importance.toFixed(2)}${memory.pinned ? '\tpinned' : ''}${memory.archivedAt ? '\tarchived' : ''}\t${memory.content}`,
  );
  const shown = page.memories.length;
  const range = shown === 0 ? 'no memories' : `${page.offset + 1}-${page.offset + shown} of ${page.total}`;
  return [...lines, range].join('\n');
}

function formatHistory(versions: MemoryVersion[]): string {
  return versions
    .map((version) => {
      const changes = Object.entries(version.changes)
        .map(([field, change]) => `${field}: ${JSON.stringify(change?.from)} -> ${JSON.stringify(change?.to)}`)
        .join('; ');
      const who = version.actor ? ` by ${version.actor}` : '';
      const why = version.reason ? ` (${version.reason})` : '';
      return `v${version.version} ${version.createdAt} ${version.action}${who}${why}${changes ? `\n  ${changes}` : ''}`;
    })
    .join('\n');
}

function formatStats(stats: MemoryStats): string {
  const counts = (record: Record<string, number>) =>
    Object.entries(record)
      .map(([key, count]) => `${key} ${count}`)
      .join(', ') || 'none';
  return [
    `memories: ${stats.active} active, ${stats.archived} archived, ${stats.pinned} pinned`,
    `by scope: ${counts(stats.byScope)}`,
    `by category: ${counts(stats.byCategory)}`,
    `added in the last 7 days: ${stats.addedLast7Days}; expiring: ${stats.expiring}`,
    `messages: ${stats.messages}; links: ${stats.links}`,
    ...(stats.mostAccessed.length
      ? [
          'most accessed:',
          ...stats.mostAccessed.map(
            (memory) =>
              `  #${memory.id} (${memory.accessCount}x, last ${memory.lastAccessedAt ?? 'never'}) ${memory.content}`,
          ),
        ]
      : []),
  ].join('\n');
}
