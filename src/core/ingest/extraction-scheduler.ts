/** What a background scheduler is given to run. */
export interface ExtractionWork {
  /**
   * Extracts every message of a channel after its watermark, in order, and moves the watermark.
   * Waits while another process holds the channel's lease (it is extracting the channel), then
   * extracts what is left. Stops between two messages once `signal` is aborted (a wait too),
   * keeping the watermark of what it finished. Once `turn` is aborted (the channel's turn is over)
   * it stops at the end of the batch in progress (a wait at once): a turn ending mid-batch does not
   * cut the batch short, so a backlog is committed in full batches however slow the machine is.
   */
  processChannel(channelId: string, signal: AbortSignal, turn?: AbortSignal): Promise<void>;
  /**
   * The channels whose newest message is past their extraction watermark (the catch-up list), after the topic
   * triggers owed (their model calls stop once `signal` is aborted: the trigger stays owed).
   */
  pendingChannels(signal?: AbortSignal): Promise<string[]>;
}

/**
 * Runs extraction in the background. `workers/extraction-queue.ts` implements it; composition
 * (`config/create-mneme.ts`) injects it, so core never imports a worker.
 */
export interface ExtractionScheduler {
  /** Asks for a channel to be extracted; returns at once. False when the queue was full and the job dropped. */
  schedule(channelId: string): boolean;
  /** Resolves once every message ingested so far has been through extraction (a catch-up pass included). */
  whenIdle(): Promise<void>;
  /** Stops after the message in progress; queued work is left to the catch-up pass of the next start. */
  close(): Promise<void>;
}

/** Builds the scheduler around the engine's extraction work. */
export type ExtractionSchedulerFactory = (work: ExtractionWork) => ExtractionScheduler;
