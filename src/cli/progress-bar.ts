/**
 * The one progress bar of the CLI and the benchmarks: `re-embedding [#####-----]  50% 20/40`, always on
 * stderr (the caller's `write`). On a terminal it is redrawn in place, at most every 200 ms; anywhere else
 * (a pipe, a log file, a CI run) nothing is drawn while it runs and `finish` writes one plain final line.
 */
export interface ProgressBar {
  /** `done` of `total` units finished (`total` left out: the one given when the bar was made). */
  update(done: number, total?: number): void;
  /** Draws the last state and ends the line; a bar never updated and without a total writes nothing. */
  finish(): void;
  /** A step that failed: ends a line drawn in place, and writes no final line (the error says the rest). */
  interrupt(): void;
}

export interface ProgressBarOptions {
  write: (text: string) => void;
  label: string;
  /** Units of the whole step; `update` may give it instead. */
  total?: number;
  /** Redraw in place (a terminal) or only write a final line. Default: whether stderr is a terminal. */
  interactive?: boolean;
  /** What the count says, e.g. `(done) => `${done} lines``; `done/total` by default. */
  unit?: (done: number, total: number) => string;
  /** Where time comes from; `Date.now` by default. */
  now?: () => number;
}

const WIDTH = 30;
const REDRAW_MS = 200;

/** Whether the bar is drawn in place: `--progress` / `--no-progress` when given, else whether stderr is a terminal. */
export function isInteractive(forced?: boolean): boolean {
  return forced ?? process.stderr.isTTY === true;
}

/**
 * What a command's `--progress` (draw in place even when stderr is not a terminal) and `--no-progress`
 * (no bar at all) asked for: `off`, or whether to draw in place.
 */
export function progressMode(option: boolean | undefined): { off: boolean; interactive: boolean } {
  return { off: option === false, interactive: isInteractive(option === true ? true : undefined) };
}

/**
 * A progress bar that writes through `write` (the CLI's stderr). Two forms: `createProgressBar(write, label)`
 * (the total comes with each update) and `createProgressBar({ write, label, total, interactive })`.
 */
export function createProgressBar(
  write: (text: string) => void,
  label: string,
  options?: Omit<ProgressBarOptions, 'write' | 'label'>,
): ProgressBar;
export function createProgressBar(options: ProgressBarOptions): ProgressBar;
export function createProgressBar(
  first: ProgressBarOptions | ((text: string) => void),
  label?: string,
  rest: Omit<ProgressBarOptions, 'write' | 'label'> = {},
): ProgressBar {
  const options: ProgressBarOptions =
    typeof first === 'function' ? { ...rest, write: first, label: label ?? '' } : first;
  const { write } = options;
  const interactive = options.interactive ?? isInteractive();
  const now = options.now ?? Date.now;
  let total = options.total ?? 0;
  let done = 0;
  let updated = false;
  let lastDraw = Number.NEGATIVE_INFINITY;
  let lastLine = '';
  const reset = () => {
    updated = false;
    lastLine = '';
    lastDraw = Number.NEGATIVE_INFINITY;
  };
  const line = () => {
    const count = options.unit
      ? options.unit(done, total)
      : total > 0
        ? `${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')}`
        : done.toLocaleString('en-US');
    if (total <= 0) return `${options.label} ${count}`;
    const share = Math.min(1, Math.max(0, done / total));
    const filled = Math.round(share * WIDTH);
    const percent = `${Math.floor(share * 100)}%`.padStart(4);
    return `${options.label} [${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${percent} ${count}`;
  };
  return {
    update(current, newTotal) {
      done = current;
      if (newTotal !== undefined) total = newTotal;
      updated = true;
      if (!interactive) return;
      const time = now();
      if (time - lastDraw < REDRAW_MS) return;
      const text = line();
      if (text === lastLine) return;
      lastDraw = time;
      lastLine = text;
      write(`\r${text}`);
    },
    finish() {
      if (!updated && total <= 0) return;
      write(`${interactive ? '\r' : ''}${line()}\n`);
      reset();
    },
    interrupt() {
      if (lastLine) write('\n');
      reset();
    },
  };
}
