import type { EngineContext } from '../engine-context.js';
import { createMembership } from '../membership.js';
import type { FactExtractor } from '../ports/fact-extractor.js';
import { EXTRACTION_BATCH_SIZE, ExtractionTask, topicKey } from './extraction-task.js';
import { conversationTriggerReason } from './ingest-policy.js';
import { type ExtractionReport, type ExtractionTarget, extractMessage, replyTo } from './message-extraction.js';

/** A topic run: conversation extraction (session scope) or work extraction (project scope). */
export type TopicTarget = Exclude<ExtractionTarget, { source: 'extraction' }>;

/**
 * Extracts the user messages of a topic past the target's watermark (`topic:<id>`, task
 * `conversation` or `work`) into memories of the target, a batch at a time, saving the watermark
 * after each batch. A message of a channel some member of the topic (work: of the project) may not
 * read is left out (ADR 5): its audience is narrower than the memory's would be.
 */
export async function extractTopicMessages(
  context: EngineContext,
  extractor: FactExtractor | null,
  target: TopicTarget,
): Promise<ExtractionReport> {
  const { storage } = context;
  const { topicId } = target;
  const task = target.source === 'work' ? ExtractionTask.work : ExtractionTask.conversation;
  const report: ExtractionReport = { messages: 0, created: [], updated: [] };
  const membership = createMembership(context);
  const space =
    target.source === 'work'
      ? { kind: 'project' as const, id: target.projectId }
      : { kind: 'topic' as const, id: topicId };
  let watermark = await topicWatermark(context, topicId, task);
  for (;;) {
    const batch = await storage.messages.listTopicAfter(topicId, watermark, EXTRACTION_BATCH_SIZE);
    if (batch.length === 0) return report;
    for (const [index, message] of batch.entries()) {
      if (message.role !== 'user') continue;
      if (!(await membership.reaches(message.channelId, space.kind, space.id))) continue;
      const reply = await replyTo(batch, index, () => storage.messages.listTopicAfter(topicId, message.id, 1));
      const one = await extractMessage(context, extractor, message, reply, target);
      report.messages += one.messages;
      report.created.push(...one.created);
      report.updated.push(...one.updated);
    }
    watermark = batch.at(-1)?.id ?? watermark;
    await storage.maintenanceState.set(topicKey(topicId), task, { watermark, lastRunAt: context.clock.now() });
  }
}

/**
 * The topic triggers, checked after each user message of a topic: a conversation extraction when
 * the policy's conversation rule fires, then, for a topic of a managed project, a work extraction
 * once `workEveryUserMessages` user messages are pending.
 */
export async function runTopicTriggers(
  context: EngineContext,
  extractor: FactExtractor | null,
  topicId: string,
): Promise<void> {
  const { directory } = context.storage;
  const topic = await directory.getTopic(topicId);
  if (!topic) return;
  if (await isConversationDue(context, topicId)) {
    await extractTopicMessages(context, extractor, { source: 'conversation', topicId });
  }
  const project = topic.projectId ? await directory.getProject(topic.projectId) : null;
  if (project?.managed && (await isWorkDue(context, topicId))) {
    await extractTopicMessages(context, extractor, { source: 'work', topicId, projectId: project.id });
  }
}

/** Whether the conversation rule fires for the topic's user messages past its `conversation` watermark. */
async function isConversationDue(context: EngineContext, topicId: string): Promise<boolean> {
  const rule = context.policy.ingest.conversation;
  if (!rule.enabled) return false;
  const watermark = await topicWatermark(context, topicId, ExtractionTask.conversation);
  const count = await context.storage.messages.countTopicAfter(topicId, watermark, 'user');
  if (count === 0) return false;
  if (count >= rule.userMessages) return true;
  const pending = await context.storage.messages.listTopicAfter(topicId, watermark, count * 4 + 10);
  const userMessageTimes = pending
    .filter((message) => message.role === 'user')
    .map((message) => Date.parse(message.createdAt));
  return conversationTriggerReason({ userMessageTimes }, rule) !== null;
}

/** Whether `workEveryUserMessages` user messages of the topic are past its `work` watermark. */
async function isWorkDue(context: EngineContext, topicId: string): Promise<boolean> {
  const watermark = await topicWatermark(context, topicId, ExtractionTask.work);
  const pending = await context.storage.messages.countTopicAfter(topicId, watermark, 'user');
  return pending >= context.policy.ingest.workEveryUserMessages;
}

async function topicWatermark(context: EngineContext, topicId: string, task: string): Promise<number> {
  return (await context.storage.maintenanceState.get(topicKey(topicId), task))?.watermark ?? 0;
}
