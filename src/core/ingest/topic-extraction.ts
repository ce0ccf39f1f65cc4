import type { ExtractedFacts, ExtractionLease } from '../../storage/extraction-store.js';
import type { EngineContext } from '../engine-context.js';
import { createMembership } from '../membership.js';
import type { FactExtractor } from '../ports/fact-extractor.js';
import type { ExtractionLeases } from './extraction-lease.js';
import { EXTRACTION_BATCH_SIZE, ExtractionTask, topicKey } from './extraction-task.js';
import { conversationTriggerReason, isSkippedMessage } from './ingest-policy.js';
import { type ExtractionReport, type ExtractionTarget, extractFacts, replyTo } from './message-extraction.js';

/**
 * Whether a step's model calls all answer within the process, with no I/O: the extractor's (none, or the offline
 * one) and the embedding model's (none, or the fake one). Only then may a step hold the store before them, and a batch
 * commit several messages (ADR 19): a provider that is slow or never answers must not hold every other call.
 */
export function answersInProcess(context: EngineContext, extractor: FactExtractor | null): boolean {
  return (
    (extractor === null || extractor.inProcess === true) &&
    (context.embedder === null || context.embedder.inProcess === true)
  );
}

/** A topic run: conversation extraction (session scope) or work extraction (project scope). */
export type TopicTarget = Exclude<ExtractionTarget, { source: 'extraction' }>;

/**
 * Extracts the user messages of a topic past the target's watermark (`topic:<id>`, task
 * `conversation` or `work`) into memories of the target, waiting for the topic's lease while another
 * process holds it; each message's facts are applied with the watermark past it. A message the
 * policy's `skip` rule skips gives nothing. A message of a channel some member of the topic (work: of
 * the project) may not read is left out (ADR 5): its audience is narrower than the memory's would be.
 */
export async function extractTopic(
  context: EngineContext,
  extractor: FactExtractor | null,
  leases: ExtractionLeases,
  target: TopicTarget,
): Promise<ExtractionReport> {
  const report: ExtractionReport = { messages: 0, created: [], updated: [] };
  for (;;) {
    const held = await leases.hold(topicLeaseKey(target), { wait: true }, (lease) =>
      extractTopicMessages(context, extractor, target, lease, report),
    );
    if (held?.value) return report;
  }
}

/**
 * Extracts the topic's user messages past the target's watermark under `lease`, adding what it
 * wrote to `report`. False when the lease was lost (another holder moved the watermark): the
 * caller claims again.
 */
async function extractTopicMessages(
  context: EngineContext,
  extractor: FactExtractor | null,
  target: TopicTarget,
  lease: ExtractionLease,
  report: ExtractionReport,
): Promise<boolean> {
  const { storage } = context;
  const { topicId } = target;
  const membership = createMembership(context);
  const space =
    target.source === 'work'
      ? { kind: 'project' as const, id: target.projectId }
      : { kind: 'topic' as const, id: topicId };
  let applied = await topicWatermark(context, topicId, lease.task);
  let watermark = applied;
  const apply = async (to: number, facts: ExtractedFacts | null = null) => {
    const step = await storage.extraction.apply(lease, { from: applied, to, at: context.clock.now(), facts });
    if (step) applied = to;
    return step;
  };
  for (;;) {
    const batch = await storage.messages.listTopicAfter(topicId, watermark, EXTRACTION_BATCH_SIZE);
    if (batch.length === 0) break;
    for (const [index, message] of batch.entries()) {
      watermark = message.id;
      if (message.role !== 'user' || isSkippedMessage(message.content, context.policy.ingest.skip)) continue;
      if (!(await membership.reaches(message.channelId, space.kind, space.id))) continue;
      const reply = await replyTo(batch, index, () => storage.messages.listTopicAfter(topicId, message.id, 1));
      // The facts are reconciled while the step holds the store (ADR 19, 2026-12-03): first, with an
      // extractor that answers in the process and a store whose batches commit together; else after the
      // model calls. Within a channel's batch (its topic triggers), the step joins that batch.
      // The audience is read again inside the hold (ADR 5, 2026-12-03): a member added to the space, or a
      // reader taken from the channel, while the model answered, is seen before anything is written.
      const step = await storage.extraction.batch(async (control) => {
        let reaches = true;
        const holdAndCheck = async () => {
          await control.hold();
          reaches = await membership.reaches(message.channelId, space.kind, space.id);
        };
        const holdsFirst = control.commitsTogether && answersInProcess(context, extractor);
        if (holdsFirst) await holdAndCheck();
        const facts = reaches
          ? await extractFacts(context, extractor, message, reply, target, holdsFirst ? undefined : holdAndCheck)
          : null;
        return apply(message.id, reaches ? facts : null);
      });
      if (!step) return false;
      report.messages += 1;
      report.created.push(...step.created);
      report.updated.push(...step.updated);
    }
  }
  return watermark === applied || (await apply(watermark)) !== null;
}

/**
 * The topic triggers, checked after each user message of a topic: a conversation extraction when
 * the policy's conversation rule fires (not for a work session of a project that is not managed,
 * which the scoped REST design leaves alone; `extract(topicId)` still runs it), then, for a topic of a
 * managed project, a work extraction once `workEveryUserMessages` user messages are pending. A topic
 * another process is extracting is left to it.
 */
export async function runTopicTriggers(
  context: EngineContext,
  extractor: FactExtractor | null,
  leases: ExtractionLeases,
  topicId: string,
): Promise<void> {
  const { directory } = context.storage;
  const topic = await directory.getTopic(topicId);
  if (!topic) return;
  const run = (target: TopicTarget) =>
    leases.hold(topicLeaseKey(target), { wait: false }, (lease) =>
      extractTopicMessages(context, extractor, target, lease, { messages: 0, created: [], updated: [] }),
    );
  const project = topic.projectId ? await directory.getProject(topic.projectId) : null;
  const unmanagedWork = topic.projectId !== null && !project?.managed;
  if (!unmanagedWork && (await isConversationDue(context, topicId))) await run({ source: 'conversation', topicId });
  if (project?.managed && (await isWorkDue(context, topicId))) {
    await run({ source: 'work', topicId, projectId: project.id });
  }
}

/** The lease of a topic target's watermark. */
function topicLeaseKey(target: TopicTarget) {
  const task = target.source === 'work' ? ExtractionTask.work : ExtractionTask.conversation;
  return { channelId: topicKey(target.topicId), task };
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
