import type { NewMemory, WriteContext } from '../../storage/memory-store.js';
import type { Message } from '../../storage/message-store.js';
import { scopeWithinAudience } from '../audience.js';
import { embedDocuments } from '../embed-documents.js';
import type { EngineContext } from '../engine-context.js';
import { createMembership } from '../membership.js';
import { type ExtractedFact, ExtractedFactsSchema, type FactExtractor } from '../ports/fact-extractor.js';
import { queryTerms } from '../recall/query-terms.js';
import { ownerKey, sectorOf } from '../scope.js';
import type { Memory } from '../types.js';
import { displayName } from './display-name.js';
import { factChanges, reconcileFact } from './fact-reconciliation.js';

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

/** One message being extracted: where its facts go, and what they have written so far. */
interface MessageRun {
  message: Message;
  target: ExtractionTarget;
  speaker: string;
  writeContext: WriteContext;
  /** The memories found for the message, kept current as facts update them. */
  candidates: Memory[];
  /** Facts to insert once every fact is reconciled. */
  pending: NewMemory[];
  /** Every memory the message's facts point at (linked as `co_extracted`). */
  written: Memory[];
  updated: Memory[];
}

/**
 * Extracts one user message (with its reply) into memories of `target`: one full-text search in
 * the sender's scopes gives the extractor's `related` memories and the candidates each fact is
 * reconciled with (`reconcileFact`); updates keep a version, new facts are inserted together, and
 * the facts of the message are linked as `co_extracted`. A memory already citing the message is
 * left alone, so a re-run writes nothing twice.
 */
export async function extractMessage(
  context: EngineContext,
  extractor: FactExtractor | null,
  message: Message,
  reply: Message | null,
  target: ExtractionTarget,
): Promise<ExtractionReport> {
  const speaker = await displayName(context, message.senderId);
  const limit = context.policy.ingest.relatedMemories;
  const candidates = await relatedMemories(context, message.content, searchOwners(message, target), limit * 2);
  const related = candidates.slice(0, limit);
  const channelIsPublic = await createMembership(context).isPublic(message.channelId);
  const proposed = await runExtractor(context, extractor, { message, reply, speaker, related });
  const facts = proposed.map((fact) => ({ ...fact, scope: scopeWithinAudience(fact.scope, channelIsPublic) }));
  const writeContext = {
    at: context.clock.now(),
    actor: `extractor:${extractor?.id ?? 'none'}`,
    reason: `from message ${message.id}`,
    deferred: true,
  };
  const run: MessageRun = { message, target, speaker, writeContext, candidates, pending: [], written: [], updated: [] };
  for (const fact of facts) await applyFact(context, run, fact);
  const created = await insertPending(context, run.pending, writeContext);
  await linkCoExtracted(context, [...run.written, ...created], writeContext.at);
  return { messages: 1, created, updated: run.updated };
}

/** Reconciles one fact with the message's candidates: updates the memory it matches, or queues it for insertion. */
async function applyFact(context: EngineContext, run: MessageRun, fact: ExtractedFact): Promise<void> {
  const memory = factMemory(fact, run.message, run.target);
  const placed = { content: fact.content, owner: memory.owner, messageId: run.message.id };
  const threshold = context.policy.ingest.similarityThreshold;
  const decision = reconcileFact(placed, run.candidates, { threshold, speaker: run.speaker, pending: run.pending });
  if (decision.action === 'insert') run.pending.push(memory);
  if (decision.action === 'done') putById(run.written, decision.memory);
  if (decision.action !== 'update') return;
  const updated = await updateWithFact(context, decision.memory, fact, run.message.id, run.writeContext);
  putById(run.candidates, updated);
  putById(run.written, updated);
  run.updated.push(updated);
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
  const hits = await memories.searchText({ terms: queryTerms(text), owners, limit: limit * 2 });
  const found = await memories.get(hits.map((hit) => hit.id));
  return found.filter((memory) => memory.category !== 'exchange' && memory.archivedAt === null).slice(0, limit);
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

/** The extractor's facts, or none when there is no extractor or its output is not valid. */
async function runExtractor(
  context: EngineContext,
  extractor: FactExtractor | null,
  input: { message: Message; reply: Message | null; speaker: string; related: readonly Memory[] },
): Promise<ExtractedFact[]> {
  if (!extractor) return [];
  const { message } = input;
  const raw = await extractor.extract({
    speaker: { userId: message.senderId, displayName: input.speaker },
    channelId: message.channelId,
    userMessage: message.content,
    assistantReply: input.reply?.content ?? null,
    createdAt: message.createdAt,
    related: input.related.map((memory) => ({ id: memory.id, content: memory.content })),
  });
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
  };
}

/** Folds a fact of message `messageId` into `memory` (`factChanges`), re-embedding a new text; a version is kept. */
async function updateWithFact(
  context: EngineContext,
  memory: Memory,
  fact: ExtractedFact,
  messageId: number,
  writeContext: WriteContext,
): Promise<Memory> {
  const changes = factChanges(memory, fact, messageId);
  if (changes.content !== undefined) {
    const [embedding = null] = await embedDocuments(context, [changes.content]);
    changes.embedding = embedding;
  }
  return context.storage.memories.update(memory.id, changes, writeContext);
}

/** Inserts the new facts of a message in one write, each with its vector when a model exists. */
async function insertPending(
  context: EngineContext,
  pending: readonly NewMemory[],
  writeContext: WriteContext,
): Promise<Memory[]> {
  if (pending.length === 0) return [];
  const embeddings = await embedDocuments(
    context,
    pending.map((memory) => memory.content),
  );
  return context.storage.memories.insert(
    pending.map((memory, index) => ({ ...memory, embedding: embeddings[index] ?? null })),
    writeContext,
  );
}

/** Links every pair of the memories one message's facts wrote or pointed at. */
async function linkCoExtracted(context: EngineContext, written: readonly Memory[], at: number): Promise<void> {
  if (written.length < 2) return;
  const links = written.flatMap((source, index) =>
    written
      .slice(index + 1)
      .map((linked) => ({ sourceId: source.id, targetId: linked.id, type: 'co_extracted' as const })),
  );
  await context.storage.links.add(links, at, { deferred: true });
}

/** Replaces the memory of the same id in `list`, or adds it at the end. */
function putById(list: Memory[], memory: Memory): void {
  const index = list.findIndex((candidate) => candidate.id === memory.id);
  if (index >= 0) list[index] = memory;
  else list.push(memory);
}
