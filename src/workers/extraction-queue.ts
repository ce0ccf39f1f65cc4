import type { Logger } from '../core/engine-context.js';
import { errorMessage } from '../core/errors.js';
import type { ExtractionScheduler, ExtractionWork } from '../core/ingest/extraction-scheduler.js';

/** Jobs the extraction queue holds before it drops new ones. */
export const EXTRACTION_QUEUE_CAPACITY = 64;

/** Options of `createExtractionQueue`. */
export interface ExtractionQueueOptions {
  /** Jobs waiting at most (default 64); a job that finds the queue full is dropped. */
  capacity?: number;
  /** Where a failed job is reported; the worker carries on with the next one. */
  logger?: Logger;
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

/**
 * The extraction worker: a bounded queue of channel jobs, run one at a time in the background.
 *
 * - `schedule` never waits: a channel already waiting is not queued twice; a full queue (64 jobs)
 *   drops the job and remembers that a catch-up pass is owed.
 * - Nothing is lost: a job extracts everything after the channel's watermark, and the catch-up
 *   pass (at start, after a drop, and in `whenIdle`) runs every channel past its watermark.
 * - `close` stops after the message in progress, so each message is extracted exactly once
 *   across a stop and a restart.
 */
export function createExtractionQueue(
  work: ExtractionWork,
  options: ExtractionQueueOptions = {},
): ExtractionScheduler & { status(): ExtractionQueueStatus } {
  const capacity = options.capacity ?? EXTRACTION_QUEUE_CAPACITY;
  const queue: string[] = [];
  const waiting = new Set<string>();
  const controller = new AbortController();
  let dropped = 0;
  let catchUpOwed = true;
  let running: Promise<void> | null = null;

  async function runJob(channelId: string): Promise<void> {
    try {
      await work.processChannel(channelId, controller.signal);
    } catch (error) {
      options.logger?.warn(
        `extraction of channel ${channelId} failed and will be retried by the next catch-up pass: ${errorMessage(error)}`,
      );
    }
  }

  async function loop(): Promise<void> {
    while (!controller.signal.aborted) {
      const channelId = queue.shift();
      if (channelId !== undefined) {
        waiting.delete(channelId);
        await runJob(channelId);
        continue;
      }
      if (!catchUpOwed) return;
      catchUpOwed = false;
      let pending: string[] = [];
      try {
        pending = await work.pendingChannels();
      } catch (error) {
        options.logger?.warn(`the extraction catch-up pass failed: ${errorMessage(error)}`);
      }
      for (const pendingChannel of pending) {
        if (controller.signal.aborted) return;
        await runJob(pendingChannel);
      }
    }
  }

  function start(): void {
    if (running || controller.signal.aborted) return;
    running = loop().finally(() => {
      running = null;
      if ((queue.length > 0 || catchUpOwed) && !controller.signal.aborted) start();
    });
  }

  start();

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
      queue.length = 0;
      waiting.clear();
      while (running) await running;
    },

    status: () => ({ queued: queue.length, dropped, running: running !== null }),
  };
}
