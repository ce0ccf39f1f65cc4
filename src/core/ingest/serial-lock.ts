/** Runs one piece of work at a time, in call order: the extraction runs of one engine (leases keep processes apart). */
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
