/** A one-line progress bar, redrawn in place on stderr: `re-embedding [#####-----] 12/40`. */
export interface ProgressBar {
  update(done: number, total: number): void;
  /** Ends the line. */
  finish(): void;
}

const WIDTH = 30;

/** A progress bar that writes through `write` (the CLI's stderr), redrawing only when the text changes. */
export function createProgressBar(write: (text: string) => void, label: string): ProgressBar {
  let last = '';
  return {
    update(done, total) {
      const share = total > 0 ? Math.min(1, done / total) : 1;
      const filled = Math.round(share * WIDTH);
      const line = `${label} [${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${done}/${total}`;
      if (line === last) return;
      last = line;
      write(`\r${line}`);
    },
    finish() {
      if (last) write('\n');
      last = '';
    },
  };
}
