import { writeFileSync } from 'node:fs';

/**
 * Resets the kernel's high-water mark of this process's resident set (what `process.resourceUsage().maxRSS`
 * reports) to the current resident set, so that a later reading is the peak of what ran after the reset. Linux
 * only (`/proc/self/clear_refs`, value 5); elsewhere, or where `/proc` refuses the write, nothing changes and it
 * returns false (the reading then stays the process's peak since it started: an upper bound).
 */
export function resetPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

/** The process's peak resident set in bytes since it started or since the last `resetPeakRss`. */
export function peakRssBytes(): number {
  return process.resourceUsage().maxRSS * 1024;
}
