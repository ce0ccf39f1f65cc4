import type { Message } from '../../storage/message-store.js';
import type { EngineContext } from '../engine-context.js';
import { isSkippedMessage } from './ingest-policy.js';

/** Whether a message asks something: it holds a question mark ("Looks fun! What games did you all play?"). */
export function asksSomething(content: string): boolean {
  return content.includes('?');
}

/**
 * The messages a conversation turn with no reply is found by besides its own words (its search-only
 * context), oldest first: the message before it and, when the turn asks nothing itself and the message
 * before that one is the turn's sender's own, that one too (ADR 21). In a back-and-forth a turn that
 * answers or goes on continues its speaker's own last statement, and the other person's message in
 * between only reacts to it: "Yeah, last weekend I had a picnic with friends from church." / "Looks fun!
 * What games did you all play?" / "Some fun ones like charades and a scavenger hunt." The answer names
 * neither the picnic nor the church: those words are two messages back, in the speaker's own statement.
 * A turn that asks something opens a question of its own and is found by its own words. Only the
 * sender's own message is added, so what a turn is found by was said by its sender or just before it
 * (a user's purge, which removes their memories, removes this context with them). A message the
 * policy's `skip` rule skips is not used. `beforePrevious`: the channel's message right before `previous`,
 * when the caller has it at hand (a page of the log); otherwise it is read.
 */
export async function followUpContext(
  context: EngineContext,
  message: Message,
  previous: Message | null,
  beforePrevious?: Message,
): Promise<Message[]> {
  if (!previous) return [];
  if (asksSomething(message.content) || previous.senderId === message.senderId) return [previous];
  const [before] =
    beforePrevious === undefined
      ? await context.storage.messages.listBefore(message.channelId, previous.id, 1)
      : [beforePrevious];
  const usable =
    before !== undefined &&
    before.senderId === message.senderId &&
    before.role === message.role &&
    !isSkippedMessage(before.content, context.policy.ingest.skip);
  return usable ? [before, previous] : [previous];
}
