import type { NewMemory } from '../../storage/memory-store.js';
import type { Message } from '../../storage/message-store.js';
import { embedDocuments } from '../embed-documents.js';
import type { EngineContext } from '../engine-context.js';
import { ownerKey } from '../scope.js';
import type { Memory } from '../types.js';
import { chunkWords } from './chunking.js';
import { displayName } from './display-name.js';
import { MAX_SHORT_MESSAGE_CHARS } from './ingest-policy.js';

/**
 * Stores a conversation turn as episodic `exchange` memories (room scope): chunks of the policy's
 * `chunkWords` words overlapping by `chunkOverlapWords`, unless a previous run already did. With
 * the assistant's reply: the exchange, both messages embedded together (the RAG path). Without one
 * (people talking to each other): the message alone, found also by the message before it
 * (search-only context, as a reply is often elliptical: "Yes, in June!"); a short message
 * (`MAX_SHORT_MESSAGE_CHARS`) with no reply is not stored.
 */
export async function storeExchangeMemories(
  context: EngineContext,
  message: Message,
  reply: Message | null,
  previous: Message | null,
): Promise<Memory[]> {
  if (!reply && message.content.trim().length <= MAX_SHORT_MESSAGE_CHARS) return [];
  const owner = ownerKey('room', { channelId: message.channelId });
  if (await isStored(context, owner, message.id)) return [];
  const { chunkWords: size, chunkOverlapWords: overlap } = context.policy.ingest;
  const said = `${await displayName(context, message.senderId)}: ${message.content}`;
  const text = reply ? `${said}\n${await displayName(context, reply.senderId)}: ${reply.content}` : said;
  const searchContext =
    !reply && previous
      ? firstWords(`${await displayName(context, previous.senderId)}: ${previous.content}`, size)
      : null;
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
    importance: 0.5,
    pinned: false,
    sourceMessageIds: reply ? [message.id, reply.id] : [message.id],
    sourceIds: [],
    searchContext,
    searchContextMessageId: searchContext ? (previous?.id ?? null) : null,
  };
  return context.storage.memories.insert(
    chunks.map((content, index) => ({ ...turn, content, embedding: embeddings[index] ?? null })),
    { at: context.clock.now(), actor: 'exchange', reason: `exchange of message ${message.id}`, deferred: true },
  );
}

/** Whether one of the room's 5 newest exchange memories (archived too) already cites the message. */
async function isStored(context: EngineContext, owner: string, messageId: number): Promise<boolean> {
  const recent = await context.storage.memories.list({
    owners: [owner],
    category: 'exchange',
    archived: 'include',
    limit: 5,
    offset: 0,
  });
  return recent.memories.some((memory) => memory.sourceMessageIds.includes(messageId));
}

/** The first `count` words of a text. */
function firstWords(text: string, count: number): string {
  const words = text.split(/\s+/).filter(Boolean);
  return words.length <= count ? text : words.slice(0, count).join(' ');
}
