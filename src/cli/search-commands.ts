import type { Command } from 'commander';
import type { Mneme } from '../core/mneme.js';
import type { ContextResult } from '../core/recall/context-block.js';
import type { RecallResult, VectorLegStatus } from '../core/recall/recall.js';
import { MAX_TOP_K } from '../core/schemas.js';
import { scopeOwnerField } from '../core/scope.js';
import type { Memory, MemoryStats } from '../core/types.js';
import { choiceOption, defined, wholeNumberOption } from './cli-arguments.js';
import type { CliIo, WithEngine } from './cli-io.js';

type ViewerOptions = Record<string, string | number | boolean | undefined>;

/** search, context. */
export function registerSearchCommands(program: Command, withEngine: WithEngine, io: Pick<CliIo, 'stderr'>): void {
  /** Says on stderr what the viewer could not see, when it searched as the administrator. */
  const noteHidden = async (mneme: Mneme, options: ViewerOptions) => {
    if (program.opts<{ as?: string }>().as !== undefined) return;
    const note = hiddenNote(options, await mneme.stats());
    if (note) io.stderr(`mneme: ${note}\n`);
  };
  withViewerOptions(
    program
      .command('search')
      .description('recall the memories that matter for a query, best first')
      .argument('<query>', 'what to look for'),
  )
    .addOption(
      wholeNumberOption(
        '--top <n>',
        `how many direct hits (default: the policy's recall.topK, 10; at most ${MAX_TOP_K})`,
        1,
        MAX_TOP_K,
      ),
    )
    .option('--explain', 'show how each score was made')
    .addOption(choiceOption('--mode <mode>', 'how to rank (default: the policy mode, hybrid)', recallModes))
    .option('--inspect', 'look without touching: no access count, last access or reinforcement is written')
    .action(
      withEngine(async (mneme, query: string, options: ViewerOptions) => {
        const result = await mneme.recall({
          query,
          viewer: viewerOf(options),
          ...defined({
            topK: options.top,
            explain: options.explain,
            mode: options.mode,
            inspect: options.inspect,
          }),
        } as Parameters<Mneme['recall']>[0]);
        await noteHidden(mneme, options);
        return result;
      }, formatRecall),
    );

  withViewerOptions(
    program
      .command('context')
      .description(
        "print the context block for a prompt (with the channel's recent user messages when the policy's context.conversationAware says so)",
      )
      .argument('<query>', 'the message to answer'),
  )
    .addOption(
      wholeNumberOption(
        '--top <n>',
        `how many direct hits (default: the policy's context.topK, 5; at most ${MAX_TOP_K})`,
        1,
        MAX_TOP_K,
      ),
    )
    .option('--inspect', "look without touching: the block's memories are not marked as retrieved")
    .action(
      withEngine(async (mneme, query: string, options: ViewerOptions) => {
        const result = await mneme.context({
          query,
          viewer: viewerOf(options),
          ...defined({ topK: options.top, inspect: options.inspect }),
        } as Parameters<Mneme['context']>[0]);
        await noteHidden(mneme, options);
        return result;
      }, formatContextResult),
    );
}

const recallModes = ['hybrid', 'recent-first'] as const;

/** The scopes a viewer sees only with an id, and the option that gives it. */
const viewerParts = [
  { scope: 'personal', option: 'user', label: 'user' },
  { scope: 'room', option: 'channel', label: 'channel' },
  { scope: 'project', option: 'project', label: 'project' },
  { scope: 'session', option: 'topic', label: 'topic' },
] as const;

/**
 * `searched as no user, channel, project or topic: 3 personal and 1 room memories are not visible; pass --user
 * or --channel to see them`: which viewer was used and how many active memories it could not see, by
 * scope (counts only, never their content). Null when it could see every scope that holds memories.
 */
export function hiddenNote(options: ViewerOptions, stats: Pick<MemoryStats, 'byScope'>): string | null {
  const missing = viewerParts.filter((part) => options[part.option] === undefined);
  const hidden = missing.filter((part) => (stats.byScope[part.scope] ?? 0) > 0);
  if (hidden.length === 0) return null;
  const given = viewerParts.filter((part) => options[part.option] !== undefined);
  const viewer =
    given.length === 0
      ? 'no user, channel, project or topic'
      : `${given.map((part) => `${part.label} ${String(options[part.option])}`).join(', ')} (no ${orList(missing.map((part) => part.label))})`;
  const counts = hidden.map((part) => `${stats.byScope[part.scope]} ${part.scope}`);
  const total = hidden.reduce((sum, part) => sum + (stats.byScope[part.scope] ?? 0), 0);
  return `searched as ${viewer}: ${andList(counts)} ${total === 1 ? 'memory is' : 'memories are'} not visible; pass ${orList(hidden.map((part) => `--${part.option}`))} to see them`;
}

function andList(words: readonly string[]): string {
  return words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

function orList(words: readonly string[]): string {
  return words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

function withViewerOptions(command: Command): Command {
  return command
    .option('--user <id>', 'search as this user (adds their personal memories)')
    .option('--channel <id>', 'search in this channel (adds its room memories)')
    .option('--project <id>', 'search in this project (adds its project memories)')
    .option('--topic <id>', 'search in this topic (adds its session memories)');
}

function viewerOf(options: ViewerOptions) {
  return defined({
    userId: options.user,
    channelId: options.channel,
    projectId: options.project,
    topicId: options.topic,
  });
}

const vectorNotes: Record<VectorLegStatus, string | null> = {
  used: null,
  'no-model': 'lexical only: no embedding model is configured',
  'model-failed': 'lexical only: the embedding model failed on the query',
  'not-in-mode': null,
};

function owner(memory: Memory): string {
  const field = scopeOwnerField[memory.scope];
  return field ? `${memory.scope}:${memory[field]}` : memory.scope;
}

/** An ISO 8601 time to the second (`2024-06-15T12:00:00Z`), or `never`. */
function time(iso: string | null): string {
  return iso === null ? 'never' : iso.replace(/\.\d+Z$/, 'Z');
}

/** `(created 2024-06-15T12:00:00Z, accessed never)`: when a memory was made and last retrieved. */
function times(memory: Memory): string {
  return `(created ${time(memory.createdAt)}, accessed ${time(memory.lastAccessedAt)})`;
}

function formatRecall(result: RecallResult): string {
  const lines = result.hits.flatMap((hit, index) => [
    `${index + 1}. #${hit.memory.id} ${hit.score.toFixed(3)} ${hit.match} [${owner(hit.memory)}] ${times(hit.memory)} ${hit.memory.content}`,
    ...(hit.explanation ? [`   ${hit.explanation}`] : []),
  ]);
  const note = vectorNotes[result.vectorLeg];
  return [...(lines.length ? lines : ['no memories found']), ...(note ? [`(${note})`] : [])].join('\n');
}

function formatContextResult(result: ContextResult): string {
  return result.text || 'no memories found';
}
