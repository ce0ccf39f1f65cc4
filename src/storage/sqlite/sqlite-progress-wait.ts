/**
 * How many busy timeouts a call waits at most for a lock whose holders keep committing (`progress`): a writer of
 * another process that takes the lock back right after each commit (an import, its extraction in batches) is never
 * stuck, but a waiter may not get in between its transactions; the call waits on while it makes progress, up to
 * this many times `busyTimeoutMs` (60 s by default).
 */
export const PROGRESS_WAIT_TIMEOUTS = 12;
