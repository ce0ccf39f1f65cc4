import type { Logger } from '../core/engine-context.js';
import { errorMessage } from '../core/errors.js';
import type { ExtractionScheduler, ExtractionWork } from '../core/ingest/extraction-scheduler.js';
import { runInBackground } from './background-work.js';

/** Jobs the extraction queue holds before it drops new ones. */
export const EXTRACTION_QUEUE_CAPACITY = 64;

/** Milliseconds one channel is extracted before the next channel waiting gets its turn. */
export const EXTRACTION_TURN_MS = 250;

/** Milliseconds before a failed channel is tried again; doubled while it keeps failing, up to 5 minutes. */
export const EXTRACTION_RETRY_DELAY_MS = 5000;

const LONGEST_RETRY_DELAY_MS = 5 * 60 * 1000;

/** Options of `createExtractionQueue`. */
export interface ExtractionQueueOptions {
  /** Jobs waiting at most (default 64); a job that finds the queue full is dropped. */
  capacity?: number;
  /** Where a failed job is reported; the worker carries on with the next one. */
  logger?: Logger;
  /** Milliseconds of one channel's turn (default `EXTRACTION_TURN_MS`). */
  turnMs?: number;
  /** Milliseconds before a catch-up pass retries a failed job (default `EXTRACTION_RETRY_DELAY_MS`). */
  retryDelayMs?: number;
}

/** Counters of the queue, for tests and status pages. */
export interface ExtractionQueueStatus {
  /** Jobs waiting. */
  queued: number;
  /** Jobs dropped because the queue was full, since start. */
  dropped: number;
  /** True while a job or a catch-up pass runs. */
  running: boolean;
}

const nextTurnOfTheLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The extraction worker: a bounded queue of channel jobs, run one at a time in the background.
 *
 * - `schedule` never waits: a channel already waiting is not queued twice; a full queue (64 jobs)
 *   drops the job and remembers that a catch-up pass is owed.
 * - Nothing is lost: a job extracts everything after the channel's watermark, and the catch-up
 *   pass (after start, after a drop, after a failure and in `whenIdle`) runs every channel past its
 *   watermark.
 * - It shares the event loop: the start's catch-up pass begins on a later turn of the loop than
 *   the one that created the queue (a service listens first); a channel has turns of `turnMs`
 *   (its turn signal aborts, it stops at the end of the batch in progress, at most
 *   `ingest.extractionBatchMessages` user messages or `BATCH_HOLD_MS` more, and goes to the back of the line, taking turns
 *   with newly scheduled channels), and the worker yields (`setImmediate`) after each
 *   turn. It runs as background work (`runInBackground`): within a turn, the storage adapter yields
 *   between its calls every few milliseconds (`createSqliteScheduler`).
 * - `close` stops after the message in progress, so each message is extracted exactly once
 *   across a stop and a restart; a call of that message waiting for a lock held by another process
 *   stops waiting (it fails, and the message is extracted again after the restart).
 */
export function createExtractionQueue(
  work: ExtractionWork,
  options: ExtractionQueueOptions = {},
): ExtractionScheduler & { status(): ExtractionQueueStatus } {
  const capacity = options.capacity ?? EXTRACTION_QUEUE_CAPACITY;
  const turnMs = options.turnMs ?? EXTRACTION_TURN_MS;
  const firstRetryDelay = options.retryDelayMs ?? EXTRACTION_RETRY_DELAY_MS;
  const queue: string[] = [];
  const waiting = new Set<string>();
  let backlog: string[] = [];
  const controller = new AbortController();
  let dropped = 0;
  let catchUpOwed = true;
  let running: Promise<void> | null = null;
  let retryDelay = firstRetryDelay;
  let retryTimer: ReturnType<typeof setTimeout> | null = null;

  function retryLater(): void {
    if (retryTimer || controller.signal.aborted) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      catchUpOwed = true;
      start();
    }, retryDelay);
    retryTimer.unref();
    retryDelay = Math.min(retryDelay * 2, LONGEST_RETRY_DELAY_MS);
  }

  /** One turn of a channel: 'more' when the turn ended before the channel's last message. */
  async function runTurn(channelId: string): Promise<'done' | 'more' | 'failed'> {
    // The turn's end stops the channel between two batches; closing stops it between two messages.
    const turn = new AbortController();
    const endTurn = () => turn.abort();
    controller.signal.addEventListener('abort', endTurn, { once: true });
    const timer = setTimeout(endTurn, turnMs);
    try {
      await work.processChannel(channelId, controller.signal, turn.signal);
      retryDelay = firstRetryDelay;
      return turn.signal.aborted ? 'more' : 'done';
    } catch (error) {
      if (controller.signal.aborted) return 'failed';
      options.logger?.warn(
        `extraction of channel ${channelId} failed and will be retried by the next catch-up pass: ${errorMessage(error)}`,
      );
      retryLater();
      return 'failed';
    } finally {
      clearTimeout(timer);
      controller.signal.removeEventListener('abort', endTurn);
    }
  }

  async function pendingChannels(): Promise<string[]> {
    try {
      return await work.pendingChannels(controller.signal);
    } catch (error) {
      if (controller.signal.aborted) return [];
      options.logger?.warn(`the extraction catch-up pass failed: ${errorMessage(error)}`);
      retryLater();
      return [];
    }
  }

  async function loop(): Promise<void> {
    let backlogNext = false;
    while (!controller.signal.aborted) {
      const fromBacklog: boolean = (backlogNext && backlog.length > 0) || queue.length === 0;
      const channelId = fromBacklog ? backlog.shift() : queue.shift();
      if (channelId === undefined) {
        if (!catchUpOwed) return;
        catchUpOwed = false;
        backlog = await pendingChannels();
        continue;
      }
      if (!fromBacklog) waiting.delete(channelId);
      backlogNext = !fromBacklog;
      if ((await runTurn(channelId)) === 'more' && !waiting.has(channelId)) backlog.push(channelId);
      await nextTurnOfTheLoop();
    }
  }

  function start(): void {
    if (running || controller.signal.aborted) return;
    running = runInBackground(loop, controller.signal).finally(() => {
      running = null;
      if ((queue.length > 0 || backlog.length > 0 || catchUpOwed) && !controller.signal.aborted) start();
    });
  }

  const kickoff = setImmediate(start);

  return {
    schedule(channelId) {
      if (controller.signal.aborted) return false;
      if (waiting.has(channelId)) return true;
      if (queue.length >= capacity) {
        dropped++;
        catchUpOwed = true;
        return false;
      }
      queue.push(channelId);
      waiting.add(channelId);
      start();
      return true;
    },

    async whenIdle() {
      catchUpOwed = true;
      start();
      while (running) await running;
    },

    async close() {
      controller.abort();
      clearImmediate(kickoff);
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = null;
      queue.length = 0;
      backlog = [];
      waiting.clear();
      while (running) await running;
    },

    status: () => ({ queued: queue.length, dropped, running: running !== null }),
  };
}
