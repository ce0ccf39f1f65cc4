import type { MemoryStore, MemoryTouch } from '../storage/memory-store.js';
import type { Logger } from './engine-context.js';
import { errorMessage } from './errors.js';

/** Memory touches (one memory in one retrieval) the queue keeps at most; past it, retrievals go unrecorded. */
export const TOUCH_QUEUE_CAPACITY = 10_000;

/** Options of `createTouchQueue`. */
export interface TouchQueueOptions {
  store: Pick<MemoryStore, 'touch'>;
  logger: Logger;
  /** Memory touches kept at most while the database refuses them (default `TOUCH_QUEUE_CAPACITY`). */
  capacity?: number;
  /** Milliseconds before the first retry after a failed write (default 1000), doubled up to a minute. */
  retryDelayMs?: number;
}

/** Counters of the queue. */
export interface TouchQueueStatus {
  /** Memory touches waiting to be written. */
  queued: number;
  /** Memory touches dropped because the queue was full, since it was created. */
  dropped: number;
}

/** The retrievals (`touch`) of one database, written at once when it can be, else kept and retried. */
export interface TouchQueue {
  /**
   * Records one retrieval of these memories at `at`. Never throws: when the write fails (another
   * process holds the write lock, the file is read-only) the touches are kept and retried in the
   * background, after older ones, so they land in retrieval order.
   */
  record(touches: readonly MemoryTouch[], at: number): Promise<void>;
  /** Writes what is kept, oldest first; false when a write failed (what is left stays kept). */
  flush(): Promise<boolean>;
  /** Stops retrying after one last flush; what it could not write is reported as lost. */
  close(): Promise<void>;
  status(): TouchQueueStatus;
}

const LONGEST_RETRY_DELAY_MS = 60_000;

const retrievals = (count: number) => `${count} memory ${count === 1 ? 'retrieval' : 'retrievals'}`;

/**
 * Creates the touch queue: recording a retrieval is best effort, so a recall answers whether or not
 * the database takes the write. Kept touches are bounded by `capacity`; a retrieval that does not
 * fit is dropped with a warning. The retry timer does not keep the process alive.
 */
export function createTouchQueue(options: TouchQueueOptions): TouchQueue {
  const capacity = options.capacity ?? TOUCH_QUEUE_CAPACITY;
  const firstDelay = options.retryDelayMs ?? 1000;
  const batches: Array<{ touches: readonly MemoryTouch[]; at: number }> = [];
  let queued = 0;
  let dropped = 0;
  let droppedSinceWritten = 0;
  let failing = false;
  let delay = firstDelay;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let closed = false;
  let tail: Promise<boolean> = Promise.resolve(true);
  let lastError: unknown = null;

  function retryLater(): void {
    if (timer || closed) return;
    timer = setTimeout(() => {
      timer = null;
      void flush();
    }, delay);
    timer.unref?.();
    delay = Math.min(delay * 2, LONGEST_RETRY_DELAY_MS);
  }

  async function writeKept(): Promise<boolean> {
    for (let batch = batches[0]; batch; batch = batches[0]) {
      try {
        await options.store.touch(batch.touches, batch.at);
      } catch (error) {
        lastError = error;
        if (!failing) {
          options.logger.warn(
            `retrievals could not be recorded (${errorMessage(error)}); they are kept and written once the database takes them`,
          );
        }
        failing = true;
        retryLater();
        return false;
      }
      batches.shift();
      queued -= batch.touches.length;
    }
    if (droppedSinceWritten > 0) {
      options.logger.warn(`${retrievals(droppedSinceWritten)} not recorded while the database refused writes`);
    }
    failing = false;
    droppedSinceWritten = 0;
    delay = firstDelay;
    return true;
  }

  function flush(): Promise<boolean> {
    tail = tail.then(writeKept);
    return tail;
  }

  return {
    async record(touches, at) {
      if (touches.length === 0 || closed) return;
      if (queued + touches.length > capacity) {
        if (droppedSinceWritten === 0) {
          options.logger.warn(
            `${retrievals(queued)} wait to be recorded, the most kept: new ones go unrecorded until the database takes writes again`,
          );
        }
        dropped += touches.length;
        droppedSinceWritten += touches.length;
        return;
      }
      batches.push({ touches, at });
      queued += touches.length;
      await flush();
    },

    flush,

    async close() {
      if (closed) return;
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      if (!(await flush()) && queued > 0) {
        options.logger.warn(`${retrievals(queued)} not recorded before closing: ${errorMessage(lastError)}`);
      }
    },

    status: () => ({ queued, dropped }),
  };
}
