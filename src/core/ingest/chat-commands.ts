import type { CommandWrite, CommandWritten, NewMessage } from '../../storage/message-store.js';
import { embedDocuments } from '../embed-documents.js';
import type { EngineContext } from '../engine-context.js';
import { ContentSchema } from '../schemas.js';
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
 * Most `*` in a `/forget` pattern: its pieces are looked for one after the other in every memory of the sender, inside
 * the append's transaction (which holds the write lock), so their number bounds the time it holds it (attack22: 15,000
 * pieces took 10 ms a memory).
 */
export const MAX_FORGET_STARS = 20;

/** A user message whose chat command is to be written with it. */
export interface CommandMessage {
  command: ChatCommand;
  /** Its place among the messages of the append. */
  index: number;
  message: NewMessage;
  /** The sender's display name, as the append stores it (`/remember` writes first person as it). */
  speakerName: string;
}

/** A chat command ready for its append: what it writes there (nothing when refused) and its reply once it has. */
export interface PreparedCommand {
  index: number;
  write: CommandWrite | null;
  result(written: CommandWritten | undefined): ChatCommandResult;
}

/**
 * What `/forget <pattern>` sent in `message` archives: the sender's memories among the owners the sender sees in the
 * message's channel whose content matches the pattern; or the reply refusing it (no text, too many `*`).
 */
export function forgetTarget(
  message: { senderId: string; channelId: string; topicId: string | null },
  pattern: string,
): { owners: string[]; userId: string; matches(content: string): boolean } | { refused: string } {
  if (pattern.replaceAll('*', '').trim().length === 0) {
    return { refused: 'Usage: /forget <pattern>, e.g. /forget dark mode' };
  }
  if (pattern.split('*').length - 1 > MAX_FORGET_STARS) {
    return { refused: `Not forgotten: a pattern may have at most ${MAX_FORGET_STARS} *` };
  }
  const owners = visibleOwners({
    userId: message.senderId,
    channelId: message.channelId,
    topicId: message.topicId ?? undefined,
  });
  return { owners, userId: message.senderId, matches: (content) => matchesForgetPattern(content, pattern) };
}

/**
 * Prepares the chat commands of the user messages of one append, so that each is written in the append's transaction
 * with its message (ADR 30): both are stored or neither. `/remember <text>` becomes a personal, pinned memory at
 * importance 1 (source `command`), first person rewritten into the sender's name, valid from the message's time, its
 * vector made here (one call for the append). `/forget <pattern>` archives, in the append's transaction, every active
 * memory of the sender that the sender can see in the message's channel and that matches the pattern (also what the
 * `/remember` messages before it in the append write); its reply says how many.
 */
export async function prepareChatCommands(
  context: EngineContext,
  messages: readonly CommandMessage[],
): Promise<PreparedCommand[]> {
  const contents = messages.map(({ command, speakerName }) =>
    command.name === 'remember' && command.text.length > 0
      ? ContentSchema.safeParse(attributeToSpeaker(command.text, speakerName))
      : null,
  );
  const embeddings = await embedDocuments(
    context,
    contents.flatMap((content) => (content?.success ? [content.data] : [])),
  );
  let embedded = 0;
  const prepared: PreparedCommand[] = [];
  for (const [position, { command, index, message }] of messages.entries()) {
    const writing = { at: context.clock.now(), actor: message.senderId };
    if (command.name === 'remember') {
      const content = contents[position];
      if (!content?.success) {
        const reply = !content
          ? 'Usage: /remember <text>, e.g. /remember I am allergic to peanuts'
          : `Not remembered: ${content.error.issues[0]?.message ?? 'invalid text'}`;
        prepared.push({ index, write: null, result: () => refused('remember', reply) });
        continue;
      }
      const owner = ownerKey('personal', { userId: message.senderId });
      prepared.push({
        index,
        write: {
          remember: {
            content: content.data,
            category: 'general',
            sector: 'semantic',
            scope: 'personal',
            owner,
            userId: message.senderId,
            channelId: message.channelId,
            projectId: null,
            topicId: message.topicId,
            source: 'command',
            importance: 1,
            pinned: true,
            sourceIds: [],
            embedding: embeddings[embedded++] ?? null,
            validFrom: message.createdAt,
          },
          context: { ...writing, reason: '/remember' },
        },
        result: (written) => ({
          command: 'remember',
          reply: `Remembered: "${content.data}"`,
          remembered: written?.remembered ?? null,
          forgotten: [],
        }),
      });
      continue;
    }
    const { pattern } = command;
    const target = forgetTarget(message, pattern);
    if ('refused' in target) {
      prepared.push({ index, write: null, result: () => refused('forget', target.refused) });
      continue;
    }
    prepared.push({
      index,
      write: {
        forget: target,
        context: { ...writing, reason: `/forget ${pattern}` },
      },
      result: (written) => {
        const count = written?.forgotten.length ?? 0;
        return {
          command: 'forget',
          reply:
            count === 0
              ? `Nothing to forget: no memory of yours matches "${pattern}".`
              : `Forgot ${count} ${count === 1 ? 'memory' : 'memories'} matching "${pattern}".`,
          remembered: null,
          forgotten: written?.forgotten ?? [],
        };
      },
    });
  }
  return prepared;
}

function refused(command: ChatCommand['name'], reply: string): ChatCommandResult {
  return { command, reply, remembered: null, forgotten: [] };
}
