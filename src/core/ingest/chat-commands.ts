import type { Message } from '../../storage/message-store.js';
import { embedDocuments } from '../embed-documents.js';
import type { EngineContext } from '../engine-context.js';
import { isMnemeError } from '../errors.js';
import { ContentSchema, MAX_PAGE_SIZE } from '../schemas.js';
import { ownerKey, visibleOwners } from '../scope.js';
import type { Memory } from '../types.js';
import { attributeToSpeaker } from './attribution.js';

/** A command typed in a chat message. */
export type ChatCommand = { name: 'remember'; text: string } | { name: 'forget'; pattern: string };

/** What a chat command did, and a sentence the agent can say back. */
export interface ChatCommandResult {
  command: ChatCommand['name'];
  /** e.g. `Remembered: "Oz is allergic to peanuts"` or `Forgot 2 memories matching "dark mode".` */
  reply: string;
  /** The pinned memory `/remember` stored (null when the command was refused). */
  remembered: Memory | null;
  /** The memories `/forget` archived. */
  forgotten: Memory[];
}

/**
 * The command in a user message: `/remember <text>` or `/forget <pattern>` (case-insensitive),
 * or null when the message is not one of them.
 */
export function parseChatCommand(content: string): ChatCommand | null {
  const match = /^\s*\/(remember|forget)(?:\s+([\s\S]*))?$/i.exec(content);
  if (!match) return null;
  const argument = (match[2] ?? '').trim();
  return match[1]?.toLowerCase() === 'remember'
    ? { name: 'remember', text: argument }
    : { name: 'forget', pattern: argument };
}

/**
 * True when `content` contains `pattern`, ignoring case and runs of spaces; `*` in the pattern
 * stands for any text ("dark*mode" matches "dark mode" and "darker colour mode").
 *
 * The pieces between the stars are found one after the other, each at its first match after the one
 * before (its earliest end): linear in the content, where one expression with `[\s\S]*` for each star
 * backtracks polynomially (`a*a*a*a*b` against 200 a's took 26 s of the process's only thread;
 * `a*a*a*a*a*a*a*a*b` against 2,000 did not end).
 */
export function matchesForgetPattern(content: string, pattern: string): boolean {
  let from = 0;
  for (const piece of pattern.trim().split('*')) {
    if (piece.length === 0) continue;
    const found = pieceExpression(piece);
    found.lastIndex = from;
    if (!found.exec(content)) return false;
    from = found.lastIndex;
  }
  return true;
}

/**
 * A piece of a forget pattern as an expression: its text, any run of spaces in it matching any run of
 * spaces. Spaces at its ends match one space (a longer run would only end the match later).
 */
function pieceExpression(piece: string): RegExp {
  // Text at even indexes, runs of spaces at odd ones; a piece's first and last parts are '' when it starts or ends with spaces.
  const parts = piece.split(/(\s+)/);
  const atAnEnd = (index: number) =>
    (index === 1 && parts[0] === '') || (index === parts.length - 2 && parts.at(-1) === '');
  const source = parts
    .map((part, index) =>
      index % 2 === 0 ? part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : atAnEnd(index) ? '\\s' : '\\s+',
    )
    .join('');
  return new RegExp(source, 'giu');
}

/**
 * Runs a chat command of `message`'s sender. `/remember <text>` stores a personal, pinned memory
 * at importance 1 (source `command`), first person rewritten into the sender's name, valid from
 * the message's time;
 * `/forget <pattern>` archives every active memory of the sender that the sender can see in
 * this channel and that matches the pattern, and says how many.
 */
export async function runChatCommand(
  context: EngineContext,
  command: ChatCommand,
  message: Message,
  speakerName: string,
): Promise<ChatCommandResult> {
  return command.name === 'remember'
    ? rememberCommand(context, command.text, message, speakerName)
    : forgetCommand(context, command.pattern, message);
}

async function rememberCommand(
  context: EngineContext,
  text: string,
  message: Message,
  speakerName: string,
): Promise<ChatCommandResult> {
  const refused = (reply: string): ChatCommandResult => ({
    command: 'remember',
    reply,
    remembered: null,
    forgotten: [],
  });
  if (text.length === 0) return refused('Usage: /remember <text>, e.g. /remember I am allergic to peanuts');
  const content = ContentSchema.safeParse(attributeToSpeaker(text, speakerName));
  if (!content.success) return refused(`Not remembered: ${content.error.issues[0]?.message ?? 'invalid text'}`);
  const [embedding = null] = await embedDocuments(context, [content.data]);
  // The sender purged while the text was embedded (by this process or another): nothing of theirs stays.
  const stored = await context.storage.memories
    .insert(
      [
        {
          content: content.data,
          category: 'general',
          sector: 'semantic',
          scope: 'personal',
          owner: ownerKey('personal', { userId: message.senderId }),
          userId: message.senderId,
          channelId: message.channelId,
          projectId: null,
          topicId: message.topicId,
          source: 'command',
          importance: 1,
          pinned: true,
          sourceMessageIds: [message.id],
          sourceIds: [],
          embedding,
          validFrom: Date.parse(message.createdAt),
        },
      ],
      { at: context.clock.now(), actor: message.senderId, reason: '/remember' },
      { sourcesMustExist: true },
    )
    .catch((error: unknown) => {
      if (isMnemeError(error, 'NOT_FOUND')) return null;
      throw error;
    });
  if (!stored) return refused('Not remembered: the message is gone (its sender was purged meanwhile)');
  const [memory] = stored;
  return {
    command: 'remember',
    reply: `Remembered: "${content.data}"`,
    remembered: memory ?? null,
    forgotten: [],
  };
}

async function forgetCommand(context: EngineContext, pattern: string, message: Message): Promise<ChatCommandResult> {
  if (pattern.replaceAll('*', '').trim().length === 0) {
    return {
      command: 'forget',
      reply: 'Usage: /forget <pattern>, e.g. /forget dark mode',
      remembered: null,
      forgotten: [],
    };
  }
  const owners = visibleOwners({
    userId: message.senderId,
    channelId: message.channelId,
    topicId: message.topicId ?? undefined,
  });
  const matching: number[] = [];
  for (let offset = 0; ; offset += MAX_PAGE_SIZE) {
    const page = await context.storage.memories.list({
      owners,
      userId: message.senderId,
      archived: 'exclude',
      limit: MAX_PAGE_SIZE,
      offset,
    });
    for (const memory of page.memories) {
      if (matchesForgetPattern(memory.content, pattern)) matching.push(memory.id);
    }
    if (offset + MAX_PAGE_SIZE >= page.total) break;
  }
  const forgotten =
    matching.length === 0
      ? []
      : await context.storage.memories.archive(matching, {
          at: context.clock.now(),
          actor: message.senderId,
          reason: `/forget ${pattern}`,
        });
  const count = forgotten.length;
  return {
    command: 'forget',
    reply:
      count === 0
        ? `Nothing to forget: no memory of yours matches "${pattern}".`
        : `Forgot ${count} ${count === 1 ? 'memory' : 'memories'} matching "${pattern}".`,
    remembered: null,
    forgotten,
  };
}
