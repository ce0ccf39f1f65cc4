import type { MemoryChanges, NewMemory, StoredEmbedding } from '../../storage/memory-store.js';
import type { Message } from '../../storage/message-store.js';
import type { EngineContext } from '../engine-context.js';
import { ErrorCode, MnemeError } from '../errors.js';
import { type ExtractedFact, ExtractedFactsSchema, type FactExtractor } from '../ports/fact-extractor.js';
import { queryTerms } from '../recall/query-terms.js';
import { ownerKey, sectorOf } from '../scope.js';
import { jaccard, wordSet } from '../similarity.js';
import type { Memory, MemorySource } from '../types.js';
import { chunkWords } from './chunking.js';
import type { ExtractionWork } from './extraction-scheduler.js';
import { conversationTriggerReason, MAX_SHORT_MESSAGE_CHARS } from './ingest-policy.js';

/** `maintenance_state` task names of the write paths. Topic rows use the channel key `topic:<id>`. */
export const ExtractionTask = {
  /** Per channel: the id of the last message the extraction worker finished. */
  channel: 'extraction',
  /** Per topic: the last message taken into a conversation extraction (`extract(topicId)`). */
  conversation: 'conversation',
  /** Per topic of a managed project: the last message taken into a work extraction. */
  work: 'work',
} as const;

/** Messages read from the log at a time; the watermark is saved after each batch. */
const BATCH_SIZE = 100;

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
type ExtractionTarget =
  | { source: 'extraction' }
  | { source: 'conversation'; topicId: string }
  | { source: 'work'; topicId: string; projectId: string };

/** Runs one piece of work at a time, in call order, so two runs never move one watermark. */
export interface SerialLock {
  run<T>(work: () => Promise<T>): Promise<T>;
}

/** A lock that runs the work given to it one after another; a failed run does not block the next. */
export function createSerialLock(): SerialLock {
  let tail: Promise<unknown> = Promise.resolve();
  return {
    run(work) {
      const result = tail.then(work);
      tail = result.catch(() => undefined);
      return result;
    },
  };
}

/** The extraction side of the engine: the channel worker's work, topic and work-session extraction. */
export interface Extraction extends ExtractionWork {
  /** Conversation extraction of a topic (session scope, source `conversation`). */
  extractTopic(topicId: string): Promise<ExtractionReport & { topicId: string }>;
  /** Work-session extraction (project scope, source `work`); only for topics of a managed project. */
  extractWork(sessionId: string): Promise<ExtractionReport & { sessionId: string; projectId: string }>;
}

/**
 * The write pipeline behind the extraction worker. For each user message after the channel's
 * watermark: the sender's display name; related memories by full-text search, scoped to that
 * user; the extractor's facts; each fact compared by Jaccard word overlap with the candidates
 * (similar: update, a version kept; new: insert with user id and scope); vectors when a model
 * exists; `co_extracted` links among the facts of one exchange; `source_message_ids` on every
 * memory; and the exchange itself stored as overlapping chunks. Re-running a message (after a
 * crash between a write and the watermark) changes nothing: a memory that already cites the
 * message is left alone.
 */
export function createExtraction(context: EngineContext, extractor: FactExtractor | null): Extraction {
  const { storage, policy } = context;
  const lock = createSerialLock();

  async function displayName(userId: string): Promise<string> {
    return (await storage.directory.getUser(userId))?.displayName ?? userId;
  }

  async function embedMany(texts: readonly string[]): Promise<Array<StoredEmbedding | null>> {
    const { embedder } = context;
    if (!embedder || texts.length === 0) return texts.map(() => null);
    try {
      const vectors = await embedder.embed(texts, 'document');
      return texts.map((_, index) => {
        const vector = vectors[index];
        return vector ? { model: embedder.modelId, vector } : null;
      });
    } catch (error) {
      context.logger.warn(
        `embedding with ${embedder.modelId} failed, stored without a vector: ${error instanceof Error ? error.message : String(error)}`,
      );
      return texts.map(() => null);
    }
  }

  /** The owner ids a fact is stored under. */
  function placement(fact: ExtractedFact, message: Message, target: ExtractionTarget) {
    if (target.source === 'conversation') return { scope: 'session' as const, ids: { topicId: target.topicId } };
    if (target.source === 'work') return { scope: 'project' as const, ids: { projectId: target.projectId } };
    if (fact.scope === 'room') return { scope: 'room' as const, ids: { channelId: message.channelId } };
    if (fact.scope === 'global') return { scope: 'global' as const, ids: {} };
    return { scope: 'personal' as const, ids: { userId: message.senderId } };
  }

  function searchOwners(message: Message, target: ExtractionTarget): string[] {
    if (target.source === 'conversation') return [ownerKey('session', { topicId: target.topicId })];
    if (target.source === 'work') return [ownerKey('project', { projectId: target.projectId })];
    return [
      ownerKey('personal', { userId: message.senderId }),
      ownerKey('room', { channelId: message.channelId }),
      ownerKey('global', {}),
    ];
  }

  /** Active memories matching the text, in the given owners, excluding exchange chunks. */
  async function related(text: string, owners: readonly string[], limit: number): Promise<Memory[]> {
    if (limit <= 0) return [];
    const hits = await storage.memories.searchText({ terms: queryTerms(text), owners, limit: limit * 2 });
    const memories = await storage.memories.get(hits.map((hit) => hit.id));
    return memories.filter((memory) => memory.category !== 'exchange' && memory.archivedAt === null).slice(0, limit);
  }

  async function runExtractor(message: Message, reply: Message | null, speaker: string, known: readonly Memory[]) {
    if (!extractor) return [];
    const raw = await extractor.extract({
      speaker: { userId: message.senderId, displayName: speaker },
      channelId: message.channelId,
      userMessage: message.content,
      assistantReply: reply?.content ?? null,
      createdAt: message.createdAt,
      related: known.map((memory) => ({ id: memory.id, content: memory.content })),
    });
    const parsed = ExtractedFactsSchema.safeParse(raw);
    if (!parsed.success) {
      context.logger.warn(`extractor ${extractor.id} returned facts that are not valid for message ${message.id}`);
      return [];
    }
    return parsed.data;
  }

  /** Extracts one user message (with its reply) into memories of `target`. */
  async function extractMessage(message: Message, reply: Message | null, target: ExtractionTarget) {
    const report: ExtractionReport = { messages: 1, created: [], updated: [] };
    const speaker = await displayName(message.senderId);
    const limit = policy.ingest.relatedMemories;
    // One search serves both: the best `limit` go to the extractor, all of them are dedup candidates
    // (facts are drawn from the message, so the memories they repeat share its words).
    const candidates = await related(message.content, searchOwners(message, target), limit * 2);
    const facts = await runExtractor(message, reply, speaker, candidates.slice(0, limit));
    const nameWords = [...wordSet(speaker, { keepStopWords: true }), 'others'];
    const written: Memory[] = [];
    const fresh: Array<{ memory: NewMemory; words: Set<string> }> = [];
    const at = context.clock.now();
    // Derived from the message log, which the extraction watermark makes re-runnable: deferred writes.
    const writeContext = {
      at,
      actor: `extractor:${extractor?.id ?? 'none'}`,
      reason: `from message ${message.id}`,
      deferred: true,
    };

    for (const fact of facts) {
      const { scope, ids } = placement(fact, message, target);
      const owner = ownerKey(scope, ids);
      const factWords = wordSet(fact.content, { ignore: nameWords });
      const threshold = policy.ingest.similarityThreshold;
      if (fresh.some((pending) => pending.memory.owner === owner && jaccard(factWords, pending.words) >= threshold)) {
        continue;
      }
      let best: { memory: Memory; score: number } | null = null;
      for (const memory of candidates) {
        if (ownerKey(memory.scope, memory) !== owner) continue;
        const score = jaccard(factWords, wordSet(memory.content, { ignore: nameWords }));
        if (!best || score > best.score) best = { memory, score };
      }
      if (best && best.score >= threshold) {
        const existing = best.memory;
        if (existing.sourceMessageIds.includes(message.id)) {
          // Already done by an earlier run (or an earlier fact of this message): nothing to write.
          if (!written.some((memory) => memory.id === existing.id)) written.push(existing);
          continue;
        }
        const changes: MemoryChanges = {
          sourceMessageIds: [...existing.sourceMessageIds, message.id],
          importance: Math.max(existing.importance, fact.importance),
        };
        if (existing.content !== fact.content) {
          changes.content = fact.content;
          const [embedding] = await embedMany([fact.content]);
          changes.embedding = embedding ?? null;
        }
        if (existing.category !== fact.category && !existing.pinned) {
          changes.category = fact.category;
          changes.sector = sectorOf(fact.category);
        }
        const updated = await storage.memories.update(existing.id, changes, writeContext);
        replaceIn(candidates, updated);
        replaceIn(written, updated);
        if (!written.includes(updated)) written.push(updated);
        report.updated.push(updated);
        continue;
      }
      fresh.push({
        words: factWords,
        memory: {
          content: fact.content,
          category: fact.category,
          sector: sectorOf(fact.category),
          scope,
          owner,
          userId: message.senderId,
          channelId: message.channelId,
          projectId: target.source === 'work' ? target.projectId : null,
          topicId: target.source === 'extraction' ? message.topicId : target.topicId,
          source: target.source satisfies MemorySource,
          importance: fact.importance,
          pinned: false,
          sourceMessageIds: [message.id],
          sourceIds: [],
          embedding: null,
        },
      });
    }

    if (fresh.length > 0) {
      const embeddings = await embedMany(fresh.map((pending) => pending.memory.content));
      const inserted = await storage.memories.insert(
        fresh.map((pending, index) => ({ ...pending.memory, embedding: embeddings[index] ?? null })),
        writeContext,
      );
      written.push(...inserted);
      report.created.push(...inserted);
    }
    if (written.length > 1) {
      const links = written.flatMap((source, index) =>
        written
          .slice(index + 1)
          .map((linked) => ({ sourceId: source.id, targetId: linked.id, type: 'co_extracted' as const })),
      );
      await storage.links.add(links, at, { deferred: true });
    }
    return report;
  }

  /**
   * Stores a conversation turn as episodic `exchange` chunks (room scope), unless a previous run
   * already did. With the assistant's reply: the exchange, both messages embedded together (the RAG
   * path). Without one (people talking to each other): the message alone, found also by the message
   * before it (search-only context, as a reply is often elliptical: "Yes, in June!").
   */
  async function storeExchange(message: Message, reply: Message | null, previous: Message | null): Promise<Memory[]> {
    const { ingest } = policy;
    if (!reply && message.content.trim().length <= MAX_SHORT_MESSAGE_CHARS) return [];
    const owner = ownerKey('room', { channelId: message.channelId });
    const recent = await storage.memories.list({
      owners: [owner],
      category: 'exchange',
      archived: 'include',
      limit: 5,
      offset: 0,
    });
    if (recent.memories.some((memory) => memory.sourceMessageIds.includes(message.id))) return [];
    const said = `${await displayName(message.senderId)}: ${message.content}`;
    const text = reply ? `${said}\n${await displayName(reply.senderId)}: ${reply.content}` : said;
    const searchContext =
      !reply && previous
        ? firstWords(`${await displayName(previous.senderId)}: ${previous.content}`, ingest.chunkWords)
        : null;
    const chunks = chunkWords(text, { size: ingest.chunkWords, overlap: ingest.chunkOverlapWords });
    const embeddings = await embedMany(searchContext ? chunks.map((chunk) => `${searchContext}\n${chunk}`) : chunks);
    return storage.memories.insert(
      chunks.map((chunk, index) => ({
        content: chunk,
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
        embedding: embeddings[index] ?? null,
        searchContext,
        searchContextMessageId: searchContext ? (previous?.id ?? null) : null,
      })),
      { at: context.clock.now(), actor: 'exchange', reason: `exchange of message ${message.id}`, deferred: true },
    );
  }

  /** The assistant message answering `batch[index]`, looked up past the batch end when needed. */
  async function replyTo(batch: readonly Message[], index: number, next: () => Promise<Message[]>) {
    const message = batch[index];
    if (!message) return null;
    const following = batch.slice(index + 1).find((candidate) => candidate.replyTo === message.id);
    if (following) return following;
    if (index < batch.length - 1) return null;
    return (await next()).find((candidate) => candidate.replyTo === message.id) ?? null;
  }

  async function checkTopicTriggers(topicId: string): Promise<void> {
    const topic = await storage.directory.getTopic(topicId);
    if (!topic) return;
    const key = topicKey(topicId);
    const rule = policy.ingest.conversation;
    if (rule.enabled) {
      const watermark = (await storage.maintenanceState.get(key, ExtractionTask.conversation))?.watermark ?? 0;
      const pendingCount = await storage.messages.countTopicAfter(topicId, watermark, 'user');
      if (pendingCount > 0) {
        const pending =
          pendingCount >= rule.userMessages
            ? null
            : (await storage.messages.listTopicAfter(topicId, watermark, pendingCount * 4 + 10)).filter(
                (message) => message.role === 'user',
              );
        const due =
          pending === null ||
          conversationTriggerReason(
            { userMessageTimes: pending.map((message) => Date.parse(message.createdAt)) },
            rule,
          );
        if (due) await extractTopicUnlocked(topicId, { source: 'conversation', topicId });
      }
    }
    if (topic.projectId) {
      const project = await storage.directory.getProject(topic.projectId);
      if (project?.managed) {
        const watermark = (await storage.maintenanceState.get(key, ExtractionTask.work))?.watermark ?? 0;
        const pending = await storage.messages.countTopicAfter(topicId, watermark, 'user');
        if (pending >= policy.ingest.workEveryUserMessages) {
          await extractTopicUnlocked(topicId, { source: 'work', topicId, projectId: project.id });
        }
      }
    }
  }

  async function extractTopicUnlocked(
    topicId: string,
    target: Exclude<ExtractionTarget, { source: 'extraction' }>,
  ): Promise<ExtractionReport> {
    const key = topicKey(topicId);
    const task = target.source === 'work' ? ExtractionTask.work : ExtractionTask.conversation;
    const report: ExtractionReport = { messages: 0, created: [], updated: [] };
    let watermark = (await storage.maintenanceState.get(key, task))?.watermark ?? 0;
    for (;;) {
      const batch = await storage.messages.listTopicAfter(topicId, watermark, BATCH_SIZE);
      if (batch.length === 0) break;
      for (const [index, message] of batch.entries()) {
        if (message.role !== 'user') continue;
        const reply = await replyTo(batch, index, () => storage.messages.listTopicAfter(topicId, message.id, 1));
        const one = await extractMessage(message, reply, target);
        report.messages += one.messages;
        report.created.push(...one.created);
        report.updated.push(...one.updated);
      }
      watermark = batch.at(-1)?.id ?? watermark;
      await storage.maintenanceState.set(key, task, { watermark, lastRunAt: context.clock.now() });
    }
    return report;
  }

  async function processChannelUnlocked(channelId: string, signal: AbortSignal): Promise<void> {
    let watermark = (await storage.maintenanceState.get(channelId, ExtractionTask.channel))?.watermark ?? 0;
    let saved = watermark;
    const save = async () => {
      if (watermark === saved) return;
      await storage.maintenanceState.set(channelId, ExtractionTask.channel, {
        watermark,
        lastRunAt: context.clock.now(),
      });
      saved = watermark;
    };
    let [previous = null] = watermark > 0 ? await storage.messages.get([watermark]) : [];
    try {
      while (!signal.aborted) {
        const batch = await storage.messages.listAfter(channelId, watermark, BATCH_SIZE);
        if (batch.length === 0) return;
        for (const [index, message] of batch.entries()) {
          if (signal.aborted) return;
          if (message.role === 'user') await processUserMessage(batch, index, previous);
          previous = message;
          watermark = message.id;
        }
        await save();
      }
    } finally {
      await save();
    }

    async function processUserMessage(batch: readonly Message[], index: number, previous: Message | null) {
      const message = batch[index];
      if (!message) return;
      const isCommand = message.content.trimStart().startsWith('/');
      const reply = await replyTo(batch, index, () => storage.messages.listAfter(channelId, message.id, 1));
      if (policy.ingest.extraction && !isCommand) await extractMessage(message, reply, { source: 'extraction' });
      if (policy.ingest.exchangeMemories && !isCommand) await storeExchange(message, reply, previous);
      if (message.topicId) await checkTopicTriggers(message.topicId);
    }
  }

  return {
    processChannel: (channelId, signal) => lock.run(() => processChannelUnlocked(channelId, signal)),

    async pendingChannels() {
      const channels = await storage.messages.channelIds();
      const states = new Map(
        (await storage.maintenanceState.list(ExtractionTask.channel)).map((state) => [state.channelId, state]),
      );
      const pending: string[] = [];
      for (const channelId of channels) {
        const watermark = states.get(channelId)?.watermark ?? 0;
        if ((await storage.messages.latestId(channelId)) > watermark) pending.push(channelId);
      }
      return pending;
    },

    extractTopic: (topicId) =>
      lock.run(async () => {
        await requireTopic(topicId);
        return { topicId, ...(await extractTopicUnlocked(topicId, { source: 'conversation', topicId })) };
      }),

    extractWork: (sessionId) =>
      lock.run(async () => {
        const topic = await requireTopic(sessionId);
        const project = topic.projectId ? await storage.directory.getProject(topic.projectId) : null;
        if (!project?.managed) {
          throw new MnemeError(
            ErrorCode.Conflict,
            `session ${sessionId} does not belong to a managed project; work extraction runs only there (createProject({ id, managed: true }) and createTopic({ id: '${sessionId}', projectId }))`,
          );
        }
        const report = await extractTopicUnlocked(sessionId, {
          source: 'work',
          topicId: sessionId,
          projectId: project.id,
        });
        return { sessionId, projectId: project.id, ...report };
      }),
  };

  async function requireTopic(topicId: string) {
    const topic = await storage.directory.getTopic(topicId);
    if (!topic) {
      throw new MnemeError(ErrorCode.NotFound, `topic ${topicId} does not exist; create it with createTopic first`);
    }
    return topic;
  }
}

/** The `maintenance_state` channel key of a topic's own watermarks. */
export function topicKey(topicId: string): string {
  return `topic:${topicId}`;
}

function replaceIn(list: Memory[], memory: Memory): void {
  const index = list.findIndex((candidate) => candidate.id === memory.id);
  if (index >= 0) list[index] = memory;
}

/** The first `count` words of a text. */
function firstWords(text: string, count: number): string {
  const words = text.split(/\s+/).filter(Boolean);
  return words.length <= count ? text : words.slice(0, count).join(' ');
}
