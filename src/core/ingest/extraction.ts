import type { Message } from '../../storage/message-store.js';
import type { EngineContext } from '../engine-context.js';
import { ErrorCode, MnemeError } from '../errors.js';
import type { FactExtractor } from '../ports/fact-extractor.js';
import { storeExchangeMemories } from './exchange-memories.js';
import type { ExtractionWork } from './extraction-scheduler.js';
import { EXTRACTION_BATCH_SIZE, ExtractionTask } from './extraction-task.js';
import { type ExtractionReport, extractMessage, replyTo } from './message-extraction.js';
import { createSerialLock } from './serial-lock.js';
import { extractTopicMessages, runTopicTriggers } from './topic-extraction.js';

export { ExtractionTask } from './extraction-task.js';
export type { ExtractionReport } from './message-extraction.js';

/** The extraction side of the engine: the channel worker's work, topic and work-session extraction. */
export interface Extraction extends ExtractionWork {
  /** Conversation extraction of a topic (session scope, source `conversation`). */
  extractTopic(topicId: string): Promise<ExtractionReport & { topicId: string }>;
  /** Work-session extraction (project scope, source `work`); only for topics of a managed project. */
  extractWork(sessionId: string): Promise<ExtractionReport & { sessionId: string; projectId: string }>;
}

/**
 * The write pipeline behind the extraction worker. For each user message after the channel's
 * watermark: its facts (`extractMessage`: related memories, the extractor, reconciliation, vectors,
 * `co_extracted` links), the exchange itself as overlapping chunks (`storeExchangeMemories`), then
 * the topic triggers (`runTopicTriggers`). Runs share one lock, so two never move one watermark.
 * Re-running a message (after a crash between a write and the watermark) changes nothing: a memory
 * that already cites the message is left alone.
 */
export function createExtraction(context: EngineContext, extractor: FactExtractor | null): Extraction {
  const { storage } = context;
  const lock = createSerialLock();
  return {
    processChannel: (channelId, signal) => lock.run(() => extractChannel(context, extractor, channelId, signal)),
    pendingChannels: () => pendingChannels(context),
    extractTopic: (topicId) =>
      lock.run(async () => {
        await requireTopic(context, topicId);
        return { topicId, ...(await extractTopicMessages(context, extractor, { source: 'conversation', topicId })) };
      }),
    extractWork: (sessionId) =>
      lock.run(async () => {
        const topic = await requireTopic(context, sessionId);
        const project = topic.projectId ? await storage.directory.getProject(topic.projectId) : null;
        if (!project?.managed) {
          throw new MnemeError(
            ErrorCode.Conflict,
            `session ${sessionId} does not belong to a managed project; work extraction runs only there (createProject({ id, managed: true }) and createTopic({ id: '${sessionId}', projectId }))`,
          );
        }
        const target = { source: 'work', topicId: sessionId, projectId: project.id } as const;
        return { sessionId, projectId: project.id, ...(await extractTopicMessages(context, extractor, target)) };
      }),
  };
}

/** Extracts the channel's messages past its watermark, saving the watermark after each batch and when stopped. */
async function extractChannel(
  context: EngineContext,
  extractor: FactExtractor | null,
  channelId: string,
  signal: AbortSignal,
): Promise<void> {
  const { storage } = context;
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
      const batch = await storage.messages.listAfter(channelId, watermark, EXTRACTION_BATCH_SIZE);
      if (batch.length === 0) return;
      for (const [index, message] of batch.entries()) {
        if (signal.aborted) return;
        if (message.role === 'user') await extractUserMessage(context, extractor, batch, index, previous);
        previous = message;
        watermark = message.id;
      }
      await save();
    }
  } finally {
    await save();
  }
}

/** One user message of a channel: its facts and exchange memories (not for a command), then its topic's triggers. */
async function extractUserMessage(
  context: EngineContext,
  extractor: FactExtractor | null,
  batch: readonly Message[],
  index: number,
  previous: Message | null,
): Promise<void> {
  const message = batch[index];
  if (!message) return;
  const { ingest } = context.policy;
  const isCommand = message.content.trimStart().startsWith('/');
  const next = () => context.storage.messages.listAfter(message.channelId, message.id, 1);
  const reply = await replyTo(batch, index, next);
  if (ingest.extraction && !isCommand)
    await extractMessage(context, extractor, message, reply, { source: 'extraction' });
  if (ingest.exchangeMemories && !isCommand) await storeExchangeMemories(context, message, reply, previous);
  if (message.topicId) await runTopicTriggers(context, extractor, message.topicId);
}

/** The channels whose newest message is past their extraction watermark. */
async function pendingChannels(context: EngineContext): Promise<string[]> {
  const { messages, maintenanceState } = context.storage;
  const channels = await messages.channelIds();
  const states = new Map(
    (await maintenanceState.list(ExtractionTask.channel)).map((state) => [state.channelId, state]),
  );
  const pending: string[] = [];
  for (const channelId of channels) {
    const watermark = states.get(channelId)?.watermark ?? 0;
    if ((await messages.latestId(channelId)) > watermark) pending.push(channelId);
  }
  return pending;
}

async function requireTopic(context: EngineContext, topicId: string) {
  const topic = await context.storage.directory.getTopic(topicId);
  if (!topic) {
    throw new MnemeError(ErrorCode.NotFound, `topic ${topicId} does not exist; create it with createTopic first`);
  }
  return topic;
}
