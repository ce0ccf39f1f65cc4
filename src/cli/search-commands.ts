import type { Command } from 'commander';
import type { Mneme } from '../core/mneme.js';
import type { ContextResult } from '../core/recall/context-block.js';
import type { RecallResult, VectorLegStatus } from '../core/recall/recall.js';
import { scopeOwnerField } from '../core/scope.js';
import type { Memory } from '../core/types.js';
import { defined, numeric } from './cli-arguments.js';
import type { WithEngine } from './cli-io.js';

type ViewerOptions = Record<string, string | boolean | undefined>;

/** search, context. */
export function registerSearchCommands(program: Command, withEngine: WithEngine): void {
  withViewerOptions(
    program
      .command('search')
      .description('recall the memories that matter for a query, best first')
      .argument('<query>', 'what to look for'),
  )
    .option('--top <n>', "how many direct hits (default: the policy's recall.topK, 10; at most 100)")
    .option('--explain', 'show how each score was made')
    .option('--mode <mode>', 'hybrid | recent-first (default: the policy mode, hybrid)')
    .option('--inspect', 'look without touching: no access count, last access or reinforcement is written')
    .action(
      withEngine(
        (mneme, query: string, options: ViewerOptions) =>
          mneme.recall({
            query,
            viewer: viewerOf(options),
            ...defined({
              topK: numeric(options.top),
              explain: options.explain,
              mode: options.mode,
              inspect: options.inspect,
            }),
          } as Parameters<Mneme['recall']>[0]),
        formatRecall,
      ),
    );

  withViewerOptions(
    program
      .command('context')
      .description(
        "print the context block for a prompt (with the channel's recent user messages when the policy's context.conversationAware says so)",
      )
      .argument('<query>', 'the message to answer'),
  )
    .option('--top <n>', "how many direct hits (default: the policy's context.topK, 5; at most 100)")
    .option('--inspect', "look without touching: the block's memories are not marked as retrieved")
    .action(
      withEngine(
        (mneme, query: string, options: ViewerOptions) =>
          mneme.context({
            query,
            viewer: viewerOf(options),
            ...defined({ topK: numeric(options.top), inspect: options.inspect }),
          } as Parameters<Mneme['context']>[0]),
        formatContextResult,
      ),
    );
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
