import type { ExtractedFacts } from '../../storage/extraction-store.js';
import type { MemoryChanges, NewMemory, StoredEmbedding } from '../../storage/memory-store.js';
import type { Message } from '../../storage/message-store.js';
import { scopeWithinAudience } from '../audience.js';
import { toIso } from '../clock.js';
import { embedDocuments } from '../embed-documents.js';
import type { EngineContext } from '../engine-context.js';
import { errorMessage } from '../errors.js';
import { createMembership } from '../membership.js';
import { type ExtractedFact, ExtractedFactsSchema, type FactExtractor } from '../ports/fact-extractor.js';
import { rarestTermCounts } from '../rarest-terms.js';
import { queryTerms } from '../recall/query-terms.js';
import { EXTRACTOR_ACTOR_PREFIX } from '../reserved-ids.js';
import { ownerKey, sectorOf } from '../scope.js';
import type { Memory } from '../types.js';
import { othersReadChannel } from '../visibility.js';
import { displayName } from './display-name.js';
import { factChanges, reconcileFact, slotSearchTerms } from './fact-reconciliation.js';

/**
 * Words of a message its related memories are searched by, at most: its rarest in the store (and the
 * fact-slot words of `slotSearchTerms`, always), whatever its length.
 */
export const RELATED_TERMS = 8;
/** Memories (full-text index entries) the words searched for related memories may be in, together (`rarestTerms`). */
export const RELATED_POSTINGS = 200;
const relatedBound = { maxTerms: RELATED_TERMS, maxPostings: RELATED_POSTINGS };

/** What one extraction run wrote. */
export interface ExtractionReport {
  /** User messages given to the extractor. */
  messages: number;
  /** New memories. */
  created: Memory[];
  /** Existing memories a similar fact updated (a version is kept). */
  updated: Memory[];
}

/** Where the facts of a run go: their own scope (the channel path), a topic (conversation) or a project (work). */
export type ExtractionTarget =
  | { source: 'extraction' }
  | { source: 'conversation'; topicId: string }
  | { source: 'work'; topicId: string; projectId: string };

/** One message being extracted: where its facts go, and what they write. */
interface MessageRun {
  message: Message;
  target: ExtractionTarget;
  speaker: string;
  /** The memories found for the message, kept current as facts change them. */
  candidates: Memory[];
  /** Facts to insert once every fact is reconciled. */
  pending: NewMemory[];
  /** Every existing memory the message's facts point at (linked as `co_extracted`). */
  written: Memory[];
  updates: Array<{ id: number; changes: MemoryChanges }>;
  /** Which pending fact (its index) supersedes which existing memory: a fact that changed. */
  supersedes: Array<{ insert: number; memoryId: number }>;
  /** The vectors of the facts' texts, made before the step held the store; none: made when needed. */
  embedded?: ReadonlyMap<string, StoredEmbedding | null>;
}

/**
 * Extracts one user message (with its reply) into the writes of `target`, for the caller to apply
 * with the watermark past the message: one full-text search in the sender's scopes gives the
 * extractor's `related` memories and the candidates each fact is reconciled with (`reconcileFact`),
 * joined by every memory already citing the message; matched memories are updated (a version each),
 * new facts inserted together, each valid from the message's time, and the facts of the message
 * linked as `co_extracted`. A fact that changes what a memory said is inserted and supersedes it
 * (the older memory stays, marked `supersededBy`, with a `supersedes` link from the newer). A memory
 * already citing the message is left alone, so a re-run writes nothing twice. An extractor whose
 * related memories only remove facts (`FactExtractor.relatedOnlyRemoves`) is asked without them
 * first, and a message it finds no fact in is not searched (nor is any message without an extractor);
 * when it finds some, its answer with them is told from that one (`withoutRelated`) where it can be.
 *
 * With `hold` (the store's write lock for the step, `ExtractionBatch.hold`), the extractor is asked and
 * the facts are embedded first, then `hold` is awaited and the candidates (the search, the memories
 * citing the message, the channel's visibility) are read again inside it and the facts reconciled with
 * them: a fact another process wrote since the first search is seen, and updated rather than written
 * twice. Without `hold`, the caller holds already (or needs not): one search, reconciled at once.
 */
export async function extractFacts(
  context: EngineContext,
  extractor: FactExtractor | null,
  message: Message,
  reply: Message | null,
  target: ExtractionTarget,
  hold?: () => Promise<void>,
): Promise<ExtractedFacts> {
  const speaker = await displayName(context, message.senderId);
  // No extractor, or one whose related memories only remove facts and that finds none without them:
  // the message gives no fact, so its related memories (and the memories citing it, which only facts
  // are reconciled with) are not searched. The same writes, none, without the full-text search.
  const unrelated =
    extractor?.relatedOnlyRemoves === true
      ? await runExtractor(context, extractor, { message, reply, speaker, related: [] })
      : null;
  if (extractor === null || unrelated?.length === 0) {
    return { context: factsContext(context, extractor, message), updates: [], inserts: [], linked: [], supersedes: [] };
  }
  const limit = context.policy.ingest.relatedMemories;
  const owners = searchOwners(message, target);
  const found = await relatedMemories(context, message.content, owners, limit * 2);
  const shown = await shownToExtractor(context, extractor, message, target);
  const related = (await shown(found)).slice(0, limit);
  if (hold) {
    const asked = await proposedFacts(context, extractor, { message, reply, speaker, related }, unrelated);
    if (asked.length === 0) {
      return {
        context: factsContext(context, extractor, message),
        updates: [],
        inserts: [],
        linked: [],
        supersedes: [],
      };
    }
    // Every vector the writes may need is of a fact's text: made before the hold (inside it only for a fact
    // told again below with a text not asked before, which an extractor whose related memories only remove
    // facts never gives).
    const texts = [...new Set(asked.map((fact) => fact.content))];
    const vectors = await embedDocuments(context, texts);
    const embedded = new Map(texts.map((text, index) => [text, vectors[index] ?? null]));
    await hold();
    const current = await relatedMemories(context, message.content, owners, limit * 2);
    const candidates = [...current, ...(await alreadyCiting(context, message.id, owners, current))];
    const channelIsPublic = await createMembership(context).isPublic(message.channelId);
    // An extractor answering in the process tells its answer again when the related memories moved (one whose related
    // memories only remove facts: the others' are not read again inside the hold).
    const currentRelated =
      unrelated !== null && extractor.inProcess === true ? (await shown(current)).slice(0, limit) : related;
    const retold = !sameMemories(related, currentRelated)
      ? await proposedFacts(context, extractor, { message, reply, speaker, related: currentRelated }, unrelated)
      : asked;
    const toldFrom = retold === asked ? related : currentRelated;
    return reconciledFacts(context, extractor, { message, target, speaker, candidates, embedded }, retold, {
      channelIsPublic,
      shownPersonal: showsPersonal(extractor, toldFrom),
    });
  }
  const candidates = [...found, ...(await alreadyCiting(context, message.id, owners, found))];
  const channelIsPublic = await createMembership(context).isPublic(message.channelId);
  const proposed = await proposedFacts(context, extractor, { message, reply, speaker, related }, unrelated);
  return reconciledFacts(context, extractor, { message, target, speaker, candidates }, proposed, {
    channelIsPublic,
    shownPersonal: showsPersonal(extractor, related),
  });
}

/**
 * Whether the extractor was shown a personal memory of the speaker that it may write into the message's facts (a chat
 * model; one whose related memories only remove facts writes nothing of theirs): its facts are then the speaker's own
 * (`scopeWithinAudience`), not the room's, whose readers may change (ADR 46).
 */
function showsPersonal(extractor: FactExtractor, related: readonly Memory[]): boolean {
  return extractor.relatedOnlyRemoves !== true && related.some((memory) => memory.scope === 'personal');
}

/**
 * Which related memories the extractor may be shown for a message: an extractor whose related memories only remove
 * facts (the offline one) writes nothing of theirs, and is shown them all; any other (a chat model) may write what it
 * is shown into the facts of the message, which cite that message only, so it is shown only memories whose audience
 * cannot come to differ from the message's own (ADR 46):
 *
 * - the speaker's personal memories only where the speaker alone reads the channel (attack28b: a text pasted into the
 *   public lobby asked the model to restate what it remembered of the speaker, and a personal memory said in a direct
 *   channel became a global one), and the facts told then are personal (`showsPersonal`);
 * - other memories only when they cite messages of the message's own channel alone, or no message, and are built on
 *   no memory: one that cites another channel (a topic's memory of another of its channels, a room's memory moved
 *   there, a global fact of another public channel) follows that channel when its audience changes (ADR 5), and a fact
 *   told from it would not (attack 30: a member who joined the topic later read, in such a fact, what was said in a
 *   channel they cannot read).
 *
 * Fact reconciliation still compares the facts with every related memory.
 */
async function shownToExtractor(
  context: EngineContext,
  extractor: FactExtractor,
  message: Message,
  target: ExtractionTarget,
): Promise<(memories: readonly Memory[]) => Promise<Memory[]>> {
  if (extractor.relatedOnlyRemoves === true) return async (memories) => [...memories];
  let speakerAlone = false;
  if (target.source === 'extraction') {
    const channel = await context.storage.memberships.getChannel(message.channelId);
    speakerAlone = channel !== null && !othersReadChannel(channel, message.senderId);
  }
  return async (memories) => {
    const cited = [...new Set(memories.flatMap((memory) => memory.sourceMessageIds))];
    const ofChannel = new Set(
      (await context.storage.messages.get(cited))
        .filter((cite) => cite.channelId === message.channelId)
        .map((cite) => cite.id),
    );
    return memories.filter((memory) =>
      memory.scope === 'personal'
        ? speakerAlone
        : memory.sourceIds.length === 0 && memory.sourceMessageIds.every((id) => ofChannel.has(id)),
    );
  };
}

/**
 * The extractor's facts for a message with these related memories: the answer without them
 * (`unrelated`) when there are none, else the one told from it (`withoutRelated`), or asked again.
 */
async function proposedFacts(
  context: EngineContext,
  extractor: FactExtractor,
  input: { message: Message; reply: Message | null; speaker: string; related: readonly Memory[] },
  unrelated: readonly ExtractedFact[] | null,
): Promise<ExtractedFact[]> {
  const { message, related } = input;
  if (unrelated !== null && related.length === 0) return [...unrelated];
  const told = unrelated !== null ? toldAnswer(context, extractor, message, unrelated, related) : null;
  return told ?? (await runExtractor(context, extractor, input));
}

/** Whether two lists of related memories are the same memories, in order, saying the same. */
function sameMemories(a: readonly Memory[], b: readonly Memory[]): boolean {
  return (
    a.length === b.length &&
    a.every((memory, index) => memory.id === b[index]?.id && memory.content === b[index]?.content)
  );
}

/** The writes of a message's facts, reconciled one by one with its candidates. */
async function reconciledFacts(
  context: EngineContext,
  extractor: FactExtractor,
  start: Pick<MessageRun, 'message' | 'target' | 'speaker' | 'candidates' | 'embedded'>,
  proposed: readonly ExtractedFact[],
  audience: { channelIsPublic: boolean; shownPersonal: boolean },
): Promise<ExtractedFacts> {
  const { message } = start;
  const facts = proposed.map((fact) => ({
    ...fact,
    scope: scopeWithinAudience(fact.scope, audience.channelIsPublic, audience.shownPersonal),
  }));
  const run: MessageRun = { ...start, pending: [], written: [], updates: [], supersedes: [] };
  const writeContext = factsContext(context, extractor, message);
  for (const fact of facts) await applyFact(context, run, fact);
  return {
    context: writeContext,
    updates: run.updates,
    inserts: await withEmbeddings(context, run),
    linked: run.written.map((memory) => memory.id),
    supersedes: run.supersedes,
  };
}

/** The write context of a message's facts. */
function factsContext(context: EngineContext, extractor: FactExtractor | null, message: Message) {
  return {
    at: context.clock.now(),
    actor: `${EXTRACTOR_ACTOR_PREFIX}${extractor?.id ?? 'none'}`,
    reason: `from message ${message.id}`,
    deferred: true,
  };
}

/**
 * Reconciles one fact with the message's candidates: an update of the memory it matches, an
 * insertion that supersedes the memory whose fact changed, or an insertion.
 */
async function applyFact(context: EngineContext, run: MessageRun, fact: ExtractedFact): Promise<void> {
  const memory = factMemory(fact, run.message, run.target);
  const placed = { content: fact.content, category: fact.category, owner: memory.owner, messageId: run.message.id };
  const threshold = context.policy.ingest.similarityThreshold;
  const decision = reconcileFact(placed, run.candidates, { threshold, speaker: run.speaker, pending: run.pending });
  if (decision.action === 'insert') run.pending.push(memory);
  if (decision.action === 'supersede') {
    run.pending.push(memory);
    run.supersedes.push({ insert: run.pending.length - 1, memoryId: decision.memory.id });
    run.candidates = run.candidates.filter((candidate) => candidate.id !== decision.memory.id);
  }
  if (decision.action === 'done') putById(run.written, decision.memory);
  if (decision.action !== 'update') return;
  const changes = await factUpdate(context, run, decision.memory, fact);
  run.updates.push({ id: decision.memory.id, changes });
  const updated = withChanges(decision.memory, changes);
  putById(run.candidates, updated);
  putById(run.written, updated);
}

/** The assistant message answering `batch[index]`, looked up past the batch end (`next`) when needed. */
export async function replyTo(
  batch: readonly Message[],
  index: number,
  next: () => Promise<Message[]>,
): Promise<Message | null> {
  const message = batch[index];
  if (!message) return null;
  const following = batch.slice(index + 1).find((candidate) => candidate.replyTo === message.id);
  if (following) return following;
  if (index < batch.length - 1) return null;
  return (await next()).find((candidate) => candidate.replyTo === message.id) ?? null;
}

/** Active memories matching the text, in the given owners, excluding exchange chunks. */
async function relatedMemories(
  context: EngineContext,
  text: string,
  owners: readonly string[],
  limit: number,
): Promise<Memory[]> {
  if (limit <= 0) return [];
  const { memories } = context.storage;
  const rarest = await rarestTermCounts(memories, queryTerms(text), owners, relatedBound);
  const terms = [...new Set([...rarest.map((kept) => kept.term), ...slotSearchTerms(text)])];
  // Every term counted just now and within the bound (no fact-slot word added, the rarest not over
  // the bound): the store need not weigh which are very common.
  const counted = terms.length === rarest.length && rarest.every((kept) => kept.count <= RELATED_POSTINGS);
  const hits = await memories.searchText({
    terms,
    owners,
    limit: limit * 2,
    ...(counted ? { postingsAtMost: RELATED_POSTINGS } : {}),
  });
  // The `limit` best hits are read first, the rest only when some of those are left out: the same
  // memories as reading every hit, without reading twice as many rows as are kept.
  const found: Memory[] = [];
  for (let start = 0; start < hits.length && found.length < limit; ) {
    const end = start === 0 ? limit : hits.length;
    const read = await memories.get(hits.slice(start, end).map((hit) => hit.id));
    found.push(...read.filter((memory) => memory.category !== 'exchange' && memory.archivedAt === null));
    start = end;
  }
  return found.slice(0, limit);
}

/** The memories of `owners` already citing the message that the search did not find (exchange chunks aside). */
async function alreadyCiting(
  context: EngineContext,
  messageId: number,
  owners: readonly string[],
  found: readonly Memory[],
): Promise<Memory[]> {
  const citing = await context.storage.extraction.citing(messageId, owners);
  return citing.filter(
    (memory) => memory.category !== 'exchange' && !found.some((candidate) => candidate.id === memory.id),
  );
}

/** The owner keys searched for a message's related memories: the target's, or the sender's scopes. */
function searchOwners(message: Message, target: ExtractionTarget): string[] {
  if (target.source === 'conversation') return [ownerKey('session', { topicId: target.topicId })];
  if (target.source === 'work') return [ownerKey('project', { projectId: target.projectId })];
  return [
    ownerKey('personal', { userId: message.senderId }),
    ownerKey('room', { channelId: message.channelId }),
    ownerKey('global', {}),
  ];
}

/**
 * The extractor's answer with these related memories told from its answer without them
 * (`withoutRelated`), checked as `extract()`'s answer is (an extractor is the user's code: an importance
 * out of range would fail the insert and stall the channel); null when it cannot tell, throws or tells
 * something not valid, and the extractor is then asked with them.
 */
function toldAnswer(
  context: EngineContext,
  extractor: FactExtractor,
  message: Message,
  unrelated: readonly ExtractedFact[],
  related: readonly Memory[],
): ExtractedFact[] | null {
  let raw: unknown;
  try {
    raw = extractor.withoutRelated?.(
      unrelated,
      related.map((memory) => ({ id: memory.id, content: memory.content })),
    );
  } catch (error) {
    context.logger.warn(
      `extractor ${extractor.id} failed to tell facts for message ${message.id}, asked again: ${errorMessage(error)}`,
    );
    return null;
  }
  if (raw === null || raw === undefined) return null;
  const parsed = ExtractedFactsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  context.logger.warn(`extractor ${extractor.id} told facts that are not valid for message ${message.id}: asked again`);
  return null;
}

/** The extractor's facts, or none when there is no extractor or its output is not valid. */
async function runExtractor(
  context: EngineContext,
  extractor: FactExtractor | null,
  input: { message: Message; reply: Message | null; speaker: string; related: readonly Memory[] },
): Promise<ExtractedFact[]> {
  if (!extractor) return [];
  const { message } = input;
  const raw = await extractor.extract(
    {
      speaker: { userId: message.senderId, displayName: input.speaker },
      channelId: message.channelId,
      messageId: message.id,
      userMessage: message.content,
      // Only the assistant's reply is told as one: a person's answer (a user message naming it in `replyTo`) is
      // theirs, not something the assistant said to the speaker, and never becomes the speaker's facts (attack28b).
      assistantReply: input.reply?.role === 'assistant' ? input.reply.content : null,
      createdAt: message.createdAt,
      related: input.related.map((memory) => ({ id: memory.id, content: memory.content })),
    },
    context.signal ? { signal: context.signal } : {},
  );
  const parsed = ExtractedFactsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  context.logger.warn(`extractor ${extractor.id} returned facts that are not valid for message ${message.id}`);
  return [];
}

/** The scope of a fact and the ids its owner key is made from. */
function placement(fact: ExtractedFact, message: Message, target: ExtractionTarget) {
  if (target.source === 'conversation') return { scope: 'session' as const, ids: { topicId: target.topicId } };
  if (target.source === 'work') return { scope: 'project' as const, ids: { projectId: target.projectId } };
  if (fact.scope === 'room') return { scope: 'room' as const, ids: { channelId: message.channelId } };
  if (fact.scope === 'global') return { scope: 'global' as const, ids: {} };
  return { scope: 'personal' as const, ids: { userId: message.senderId } };
}

/** The memory a new fact becomes (without its vector). */
function factMemory(fact: ExtractedFact, message: Message, target: ExtractionTarget): NewMemory {
  const { scope, ids } = placement(fact, message, target);
  return {
    content: fact.content,
    category: fact.category,
    sector: sectorOf(fact.category),
    scope,
    owner: ownerKey(scope, ids),
    userId: message.senderId,
    channelId: message.channelId,
    projectId: target.source === 'work' ? target.projectId : null,
    topicId: target.source === 'extraction' ? message.topicId : target.topicId,
    source: target.source,
    importance: fact.importance,
    pinned: false,
    sourceMessageIds: [message.id],
    sourceIds: [],
    embedding: null,
    validFrom: Date.parse(message.createdAt),
  };
}

/** The changes folding a fact of the run's message into `memory` (`factChanges`), with the vector of a new text. */
async function factUpdate(
  context: EngineContext,
  run: MessageRun,
  memory: Memory,
  fact: ExtractedFact,
): Promise<MemoryChanges> {
  const { message } = run;
  const changes = factChanges(memory, fact, { id: message.id, saidAt: Date.parse(message.createdAt) });
  if (changes.content !== undefined) {
    const [embedding = null] = await embedTexts(context, run, [changes.content]);
    changes.embedding = embedding;
  }
  return changes;
}

/** The vectors of `texts`: those made before the hold (`run.embedded`), else from the model now. */
async function embedTexts(
  context: EngineContext,
  run: MessageRun,
  texts: readonly string[],
): Promise<Array<StoredEmbedding | null>> {
  const { embedded } = run;
  if (!embedded || !texts.every((text) => embedded.has(text))) return embedDocuments(context, texts);
  return texts.map((text) => embedded.get(text) ?? null);
}

/** The memory as it will be once `changes` are applied (what reconciliation reads of it). */
function withChanges(memory: Memory, changes: MemoryChanges): Memory {
  return {
    ...memory,
    content: changes.content ?? memory.content,
    category: changes.category ?? memory.category,
    sector: changes.sector ?? memory.sector,
    importance: changes.importance ?? memory.importance,
    sourceMessageIds: changes.sourceMessageIds ? [...changes.sourceMessageIds] : memory.sourceMessageIds,
    validFrom: changes.validFrom === undefined ? memory.validFrom : toIso(changes.validFrom),
  };
}

/** The new facts of a message, each with its vector when a model exists (one embedding call). */
async function withEmbeddings(context: EngineContext, run: MessageRun): Promise<NewMemory[]> {
  const { pending } = run;
  if (pending.length === 0) return [];
  const embeddings = await embedTexts(
    context,
    run,
    pending.map((memory) => memory.content),
  );
  return pending.map((memory, index) => ({ ...memory, embedding: embeddings[index] ?? null }));
}

/** Replaces the memory of the same id in `list`, or adds it at the end. */
function putById(list: Memory[], memory: Memory): void {
  const index = list.findIndex((candidate) => candidate.id === memory.id);
  if (index >= 0) list[index] = memory;
  else list.push(memory);
}
