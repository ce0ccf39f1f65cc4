/** Progress of a long step, on stderr. */
export interface ProgressBar {
  /** `done` of `total` units finished; redrawn at most every 200 ms. */
  update(done: number): void;
  /** Draws the finished bar and ends its line. */
  finish(): void;
}

export interface ProgressBarOptions {
  write: (text: string) => void;
  label: string;
  total: number;
  /** A bar redrawn in place (a terminal); otherwise one line at each quarter. */
  interactive: boolean;
  /** Where time comes from; `Date.now` by default. */
  now?: () => number;
}

const WIDTH = 30;

/** `label [#########---------]  45% 45,000/100,000` redrawn in place, or a line every 25% when not a terminal. */
export function createProgressBar(options: ProgressBarOptions): ProgressBar {
  const { write, label, interactive } = options;
  const total = Math.max(1, options.total);
  const now = options.now ?? Date.now;
  let lastDraw = 0;
  let lastQuarter = 0;
  let current = 0;
  const line = (done: number) => {
    const share = Math.min(1, done / total);
    const filled = Math.round(share * WIDTH);
    const percent = `${Math.floor(share * 100)}%`.padStart(4);
    return `${label} [${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${percent} ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')}`;
  };
  return {
    update(done) {
      current = done;
      if (interactive) {
        const time = now();
        if (time - lastDraw < 200) return;
        lastDraw = time;
        write(`\r${line(done)}`);
        return;
      }
      const quarter = Math.floor((Math.min(done, total) / total) * 4);
      if (quarter > lastQuarter && quarter < 4) {
        lastQuarter = quarter;
        write(`${line(done)}\n`);
      }
    },
    finish() {
      write(interactive ? `\r${line(Math.max(current, total))}\n` : `${line(Math.max(current, total))}\n`);
    },
  };
}
