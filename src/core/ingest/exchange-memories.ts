import type { ExtractedExchange } from '../../storage/extraction-store.js';
import type { NewMemory } from '../../storage/memory-store.js';
import type { Message } from '../../storage/message-store.js';
import { embedDocuments } from '../embed-documents.js';
import type { EngineContext } from '../engine-context.js';
import { EXCHANGE_ACTOR } from '../reserved-ids.js';
import { ownerKey } from '../scope.js';
import { chunkWords } from './chunking.js';
import { displayName } from './display-name.js';
import { followUpContext } from './follow-up-context.js';
import { MAX_SHORT_MESSAGE_CHARS } from './ingest-policy.js';

/**
 * A conversation turn as episodic `exchange` memories (room scope), for the caller to apply with the
 * watermark past the message: chunks of the policy's `chunkWords` words overlapping by
 * `chunkOverlapWords`, chunk `i` of the message stored once whatever re-runs (the store skips it). With
 * the assistant's reply: the exchange, both messages embedded together (the RAG path). Without one
 * (people talking to each other): the message alone, found also by the message before it
 * (search-only context, as a reply is often elliptical: "Yes, in June!"), and, for a turn that asks
 * nothing, by its sender's own message before that (`followUpContext`, ADR 21); a short message
 * (`MAX_SHORT_MESSAGE_CHARS`) with no reply is not stored. Importance: the policy's `exchangeImportance`;
 * `validFrom`: when the turn was said (the later of the message and its reply). `beforePrevious`: the
 * channel's message before `previous`, when the caller has it at hand (else it is read).
 */
export async function exchangeChunks(
  context: EngineContext,
  message: Message,
  reply: Message | null,
  previous: Message | null,
  beforePrevious?: Message,
): Promise<ExtractedExchange | null> {
  if (!reply && message.content.trim().length <= MAX_SHORT_MESSAGE_CHARS) return null;
  const owner = ownerKey('room', { channelId: message.channelId });
  const { chunkWords: size, chunkOverlapWords: overlap, exchangeImportance } = context.policy.ingest;
  const said = `${await displayName(context, message.senderId)}: ${message.content}`;
  const text = reply ? `${said}\n${await displayName(context, reply.senderId)}: ${reply.content}` : said;
  const contextMessages = reply ? [] : await followUpContext(context, message, previous, beforePrevious);
  const contextLines = await Promise.all(
    contextMessages.map(async (said) =>
      firstWords(`${await displayName(context, said.senderId)}: ${said.content}`, size),
    ),
  );
  const searchContext = contextLines.length > 0 ? contextLines.join('\n') : null;
  const chunks = chunkWords(text, { size, overlap });
  const embeddings = await embedDocuments(
    context,
    searchContext ? chunks.map((chunk) => `${searchContext}\n${chunk}`) : chunks,
  );
  const turn: Omit<NewMemory, 'content' | 'embedding'> = {
    category: 'exchange',
    sector: 'episodic',
    scope: 'room',
    owner,
    userId: message.senderId,
    channelId: message.channelId,
    projectId: null,
    topicId: message.topicId,
    source: 'exchange',
    importance: exchangeImportance,
    pinned: false,
    sourceMessageIds: reply ? [message.id, reply.id] : [message.id],
    sourceIds: [],
    searchContext,
    searchContextMessageId: searchContext ? (previous?.id ?? null) : null,
    validFrom: Math.max(...[message, reply].flatMap((said) => (said ? [Date.parse(said.createdAt)] : []))),
  };
  return {
    context: {
      at: context.clock.now(),
      actor: EXCHANGE_ACTOR,
      reason: `exchange of message ${message.id}`,
      deferred: true,
    },
    messageId: message.id,
    chunks: chunks.map((content, index) => ({ ...turn, content, embedding: embeddings[index] ?? null })),
  };
}

/** The first `count` words of a text. */
function firstWords(text: string, count: number): string {
  const words = text.split(/\s+/).filter(Boolean);
  return words.length <= count ? text : words.slice(0, count).join(' ');
}
