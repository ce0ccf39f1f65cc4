import { randomUUID } from 'node:crypto';
import type { ExtractedForget, ExtractionBatch, ExtractionLease } from '../../storage/extraction-store.js';
import type { Message } from '../../storage/message-store.js';
import type { EngineContext } from '../engine-context.js';
import { ErrorCode, errorMessage, MnemeError } from '../errors.js';
import type { FactExtractor } from '../ports/fact-extractor.js';
import { withBatchReads } from './batch-reads.js';
import { forgetTarget, parseChatCommand } from './chat-commands.js';
import { exchangeChunks } from './exchange-memories.js';
import { createExtractionLeases, type ExtractionLeases } from './extraction-lease.js';
import type { ExtractionWork } from './extraction-scheduler.js';
import { EXTRACTION_BATCH_SIZE, ExtractionTask } from './extraction-task.js';
import { isSkippedMessage, type SkipRule } from './ingest-policy.js';
import { type ExtractionReport, extractFacts, replyTo } from './message-extraction.js';
import { createSerialLock } from './serial-lock.js';
import { answersInProcess, extractTopic, runTopicTriggers } from './topic-extraction.js';

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
 * Milliseconds of work after which a batch ends once its channel's turn is over. The turn's end does
 * not cut a batch short (a loaded machine made batches of a few messages, each commit writing an FTS5
 * segment and the batch's pages), but another process writing the same file waits for a batch, and
 * its busy timeout (5 s by default) must cover it.
 */
export const BATCH_HOLD_MS = 2_000;

/** What one channel run needs besides the channel. */
interface ChannelRun {
  context: EngineContext;
  extractor: FactExtractor | null;
  leases: ExtractionLeases;
  /** Topics whose triggers are owed: they failed after their step committed (run by the next catch-up pass). */
  owedTriggers: Set<string>;
  /** Stops the run between two messages (the worker closing). */
  signal: AbortSignal;
  /** Ends the run between two batches (the channel's turn is over); `signal` when the caller gives no turn. */
  turn: AbortSignal;
}

/**
 * The write pipeline behind the extraction worker. For each user message after the channel's
 * watermark: its facts (`extractFacts`: related memories, the extractor, reconciliation, vectors,
 * `co_extracted` links) and the exchange itself as overlapping chunks (`exchangeChunks`), applied in
 * one transaction with the watermark past the message, then the topic triggers (`runTopicTriggers`).
 * Exactly once across processes and crashes: a run holds the lease of the watermark it moves (a
 * process waits for a channel another live process extracts, and takes over one whose process died),
 * and a step applies only if the watermark is still the one its run read. Within the engine, runs
 * share one lock.
 */
export function createExtraction(context: EngineContext, extractor: FactExtractor | null): Extraction {
  const { storage } = context;
  const lock = createSerialLock();
  const leases = createExtractionLeases(storage.extraction, {
    owner: randomUUID(),
    ttlMs: context.policy.ingest.extractionLeaseSeconds * 1000,
  });
  // Topics whose triggers failed after their channel's step committed (a chat-model extractor runs them
  // then): the channel is no longer pending, so the next catch-up pass runs them first. The first pass of
  // the engine owes every topic with messages: a process that died between a commit and its triggers left
  // them to it (a trigger runs only when its rule is due, under the topic's lease and watermark).
  const owedTriggers = new Set<string>();
  let swept = false;
  return {
    processChannel: (channelId, signal, turn) =>
      lock.run(() =>
        processChannel({ context, extractor, leases, owedTriggers, signal, turn: turn ?? signal }, channelId),
      ),
    async pendingChannels(signal) {
      if (!swept) {
        for (const topicId of await storage.messages.topicIds()) owedTriggers.add(topicId);
        swept = true;
      }
      if (owedTriggers.size > 0) {
        await lock.run(async () => {
          for (const topicId of [...owedTriggers]) {
            // One topic's failure (its model call) keeps it owed and stops neither the others nor the channels.
            if (signal?.aborted) return;
            try {
              await runTopicTriggers(signal ? { ...context, signal } : context, extractor, leases, topicId);
              owedTriggers.delete(topicId);
            } catch (error) {
              if (signal?.aborted) return;
              context.logger.warn(
                `extraction of topic ${topicId} failed and will be retried by the next catch-up pass: ${errorMessage(error)}`,
              );
            }
          }
        });
      }
      return pendingChannels(context);
    },
    extractTopic: (topicId) =>
      lock.run(async () => {
        await requireTopic(context, topicId);
        return { topicId, ...(await extractTopic(context, extractor, leases, { source: 'conversation', topicId })) };
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
        return { sessionId, projectId: project.id, ...(await extractTopic(context, extractor, leases, target)) };
      }),
  };
}

/** Extracts the channel under its lease, waiting while another process holds it; claims again after losing it. */
async function processChannel(run: ChannelRun, channelId: string): Promise<void> {
  const key = { channelId, task: ExtractionTask.channel };
  // A wait for another process's lease ends with the turn or the stop. Not `AbortSignal.any`: on Node 20 it
  // leaves an entry on the worker's long-lived signal for every turn (attack 6).
  const wait = eitherSignal(run.signal, run.turn);
  try {
    for (;;) {
      const held = await run.leases.hold(key, { wait: true, signal: wait.signal }, (lease) =>
        extractChannel(run, lease),
      );
      if (!held || held.value) return;
    }
  } finally {
    wait.release();
  }
}

/** A signal aborted when `a` or `b` is; `release` removes its listeners from both. */
function eitherSignal(a: AbortSignal, b: AbortSignal): { signal: AbortSignal; release(): void } {
  if (a === b) return { signal: a, release: () => {} };
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (a.aborted || b.aborted) controller.abort();
  else {
    a.addEventListener('abort', abort, { once: true });
    b.addEventListener('abort', abort, { once: true });
  }
  return {
    signal: controller.signal,
    release() {
      a.removeEventListener('abort', abort);
      b.removeEventListener('abort', abort);
    },
  };
}

/** Where a channel run stands: its watermarks, the page of the log it reads, the message before the next one. */
interface ChannelCursor {
  /** The stored watermark: the last message whose step was applied. */
  applied: number;
  /** The last message gone through (assistant messages after `applied` included). */
  watermark: number;
  previous: Message | null;
  page: Message[];
  index: number;
  done: boolean;
  /** Topics whose triggers run once the batch has committed (one message a batch: see `extractUserMessage`). */
  triggers: string[];
}

/**
 * Extracts the channel's messages past its watermark until none is left or the run is stopped, one
 * step a user message (the messages before it move the watermark with it; a last step moves it past
 * those that end the run). The steps are applied in batches (`extractBatch`), each committed whole.
 * False when a step found the lease or the watermark taken by another holder.
 */
async function extractChannel(run: ChannelRun, lease: ExtractionLease): Promise<boolean> {
  const { context, signal } = run;
  const { storage } = context;
  const applied = (await storage.maintenanceState.get(lease.channelId, lease.task))?.watermark ?? 0;
  const [previous = null] = applied > 0 ? await storage.messages.get([applied]) : [];
  const cursor: ChannelCursor = {
    applied,
    watermark: applied,
    previous,
    page: [],
    index: 0,
    done: false,
    triggers: [],
  };
  const batched = answersInProcess(context, run.extractor);
  const limit = batched ? context.policy.ingest.extractionBatchMessages : 1;
  // The turn ends the run between batches only: a batch runs to its own end (ADR 19).
  while (!signal.aborted && !run.turn.aborted && !cursor.done) {
    const batch = (control: ExtractionBatch) => extractBatch(run, lease, cursor, { limit, control });
    const done = await storage.extraction.batch(batch);
    // Committed: a trigger that fails now is owed, not lost with the turn (the channel is past the message).
    const triggers = cursor.triggers.splice(0);
    for (const topicId of triggers) run.owedTriggers.add(topicId);
    for (const topicId of triggers) {
      await runTopicTriggers({ ...context, signal }, run.extractor, run.leases, topicId);
      run.owedTriggers.delete(topicId);
    }
    if (!done) return false;
  }
  if (cursor.watermark === cursor.applied) return true;
  const last = { from: cursor.applied, to: cursor.watermark, at: context.clock.now() };
  return (await storage.extraction.apply(lease, last)) !== null;
}

/**
 * One batch of a channel run: up to `limit` user messages, each its own step, in order, ending after
 * `ingest.extractionBatchMs` of work once another call of the process waits for the store
 * (`othersWaiting`), or after `BATCH_HOLD_MS` once the channel's turn is over; the store commits
 * them together (`ExtractionStore.batch`), and each message's reads see the steps before it, so the
 * memories are those of one step a transaction. False when a step was refused (lease lost).
 */
async function extractBatch(
  run: ChannelRun,
  lease: ExtractionLease,
  cursor: ChannelCursor,
  bounds: { limit: number; control: ExtractionBatch },
): Promise<boolean> {
  const { limit, control } = bounds;
  const othersWaiting = () => control.othersWaiting();
  const { storage } = run.context;
  const started = performance.now();
  const budget = run.context.policy.ingest.extractionBatchMs;
  // The sender's name and the channel's visibility are read once a batch (`withBatchReads`); the worker's stop
  // stops the step's model calls (a provider that never answers does not hold the close; the step is not applied).
  const reads = { ...withBatchReads(run.context), signal: run.signal };
  let extracted = 0;
  // Nobody waiting for the store, the batch runs on to `limit` messages: fewer commits, the same memories.
  // Past the channel's turn, at most BATCH_HOLD_MS: another process writing the file waits for the batch.
  const within = () => {
    const spent = performance.now() - started;
    return (spent < budget || !othersWaiting()) && (spent < BATCH_HOLD_MS || !run.turn.aborted);
  };
  while (!run.signal.aborted && extracted < limit && within()) {
    if (cursor.index >= cursor.page.length) {
      cursor.page = await storage.messages.listAfter(lease.channelId, cursor.watermark, EXTRACTION_BATCH_SIZE);
      cursor.index = 0;
    }
    const message = cursor.page[cursor.index];
    if (!message) {
      cursor.done = true;
      return true;
    }
    if (message.role === 'user') {
      const step = { batch: cursor.page, index: cursor.index, previous: cursor.previous, from: cursor.applied };
      if (!(await extractUserMessage(run, reads, lease, step, { control, cursor }))) return false;
      cursor.applied = message.id;
      extracted++;
    }
    cursor.previous = message;
    cursor.watermark = message.id;
    cursor.index++;
  }
  return true;
}

/**
 * The `/forget` a step goes past, applied again to what extraction wrote since its append from the messages before it
 * (`ExtractedForget`): a history ingested at once appends the command before the facts it names are extracted.
 */
function forgetGonePast(context: EngineContext, message: Message): ExtractedForget | null {
  const { chatCommands, skip } = context.policy.ingest;
  const command = chatCommands && !isSkippedMessage(message.content, skip) ? parseChatCommand(message.content) : null;
  if (command?.name !== 'forget') return null;
  const target = forgetTarget(message, command.pattern);
  if ('refused' in target) return null;
  const writing = { at: context.clock.now(), actor: message.senderId, reason: `/forget ${command.pattern}` };
  return { ...target, before: message.id, context: writing };
}

/** Where a user message stands in its run: its batch and place, the message before it, the watermark before it. */
interface UserMessageStep {
  batch: readonly Message[];
  index: number;
  previous: Message | null;
  from: number;
}

/**
 * One user message of a channel: its facts and exchange chunks (not for a command, nor for a message
 * the policy's `skip` rule skips, which is also not used as the next one's search context) applied with
 * the watermark moved to it, then its topic's triggers. `reads` is the batch's context (`withBatchReads`).
 * The facts are reconciled with the memories read while the step holds the store (`ExtractionBatch.hold`),
 * so that a fact another process wrote meanwhile is seen. With an extractor and an embedding model that
 * answer in the process (`answersInProcess`) and a store whose batch commits its steps together (SQLite),
 * the step holds before all its reads, as the batch's later steps always did; otherwise the model calls
 * (the extractor, the embeddings) come first, outside the hold, and the triggers (whose topic extraction
 * calls the models) run after the batch's commit (`cursor.triggers`: one message a batch there, so in the
 * same order).
 * False when the step was refused (lease lost).
 */
async function extractUserMessage(
  run: ChannelRun,
  reads: EngineContext,
  lease: ExtractionLease,
  step: UserMessageStep,
  batch: { control: ExtractionBatch; cursor: ChannelCursor },
): Promise<boolean> {
  const { context, extractor } = run;
  const { batch: page, index, previous, from } = step;
  const { control } = batch;
  const message = page[index];
  if (!message) return true;
  const { ingest } = context.policy;
  const isCommand = message.content.trimStart().startsWith('/');
  const gives = !isCommand && !isSkippedMessage(message.content, ingest.skip);
  const holdsFirst = control.commitsTogether && answersInProcess(context, extractor);
  const next = () => context.storage.messages.listAfter(message.channelId, message.id, 1);
  const reply = gives ? await replyTo(page, index, next) : null;
  const searchContext = previous && !isSkippedUserMessage(previous, ingest.skip) ? previous : null;
  // The message before the search context, when the page holds it (the page is the channel's log in order).
  const beforeContext = searchContext && page[index - 1]?.id === searchContext.id ? page[index - 2] : undefined;
  const chunks = () =>
    ingest.exchangeMemories && gives ? exchangeChunks(reads, message, reply, searchContext, beforeContext) : null;
  if (holdsFirst) await control.hold();
  // Held later: the exchange's vectors are made before the hold.
  const early = holdsFirst ? null : await chunks();
  const facts =
    ingest.extraction && gives
      ? await extractFacts(
          reads,
          extractor,
          message,
          reply,
          { source: 'extraction' },
          holdsFirst ? undefined : () => control.hold(),
        )
      : null;
  const exchange = holdsFirst ? await chunks() : early;
  const applied = await context.storage.extraction.apply(lease, {
    from,
    to: message.id,
    at: context.clock.now(),
    facts,
    exchange,
    forget: isCommand ? forgetGonePast(context, message) : null,
  });
  if (!applied) return false;
  if (message.topicId) {
    if (answersInProcess(context, extractor)) await runTopicTriggers(context, extractor, run.leases, message.topicId);
    else batch.cursor.triggers.push(message.topicId);
  }
  return true;
}

/** Whether a message is a user message the policy's `skip` rule skips. */
function isSkippedUserMessage(message: Message, rule: SkipRule): boolean {
  return message.role === 'user' && isSkippedMessage(message.content, rule);
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
