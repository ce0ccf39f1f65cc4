import { describe, expect, it } from 'vitest';
import { createProgressBar } from './progress-bar.js';

/** A bar writing into a string, on a clock the test moves. */
function recorder() {
  const written: string[] = [];
  let time = 0;
  return {
    write: (text: string) => written.push(text),
    text: () => written.join(''),
    now: () => time,
    advance: (ms: number) => {
      time += ms;
    },
  };
}

describe('the progress bar', () => {
  it('redraws in place on a terminal, at most every 200 ms, and ends with the finished line', () => {
    const out = recorder();
    const bar = createProgressBar({ write: out.write, label: 'storing', total: 40, interactive: true, now: out.now });
    bar.update(10);
    out.advance(50);
    bar.update(20);
    out.advance(200);
    bar.update(30);
    bar.finish();
    expect(out.text()).toBe(
      `\rstoring [${'#'.repeat(8)}${'-'.repeat(22)}]  25% 10/40` +
        `\rstoring [${'#'.repeat(23)}${'-'.repeat(7)}]  75% 30/40` +
        `\rstoring [${'#'.repeat(23)}${'-'.repeat(7)}]  75% 30/40\n`,
    );
  });

  it('draws nothing while it runs when not on a terminal, then one plain final line', () => {
    const out = recorder();
    const bar = createProgressBar(out.write, 're-embedding', { interactive: false, now: out.now });
    for (let done = 0; done <= 1000; done += 100) {
      bar.update(done, 1000);
      out.advance(1000);
    }
    expect(out.text()).toBe('');
    bar.finish();
    expect(out.text()).toBe(`re-embedding [${'#'.repeat(30)}] 100% 1,000/1,000\n`);
  });

  it('counts without a bar when the total is unknown, in the unit it is given', () => {
    const out = recorder();
    let lines = 0;
    const bar = createProgressBar(out.write, 'ingesting', { interactive: false, unit: () => `${lines} lines` });
    lines = 7;
    bar.update(512, 0);
    bar.finish();
    expect(out.text()).toBe('ingesting 7 lines\n');
  });

  it('writes no final line for an interrupted step, and ends a line drawn in place', () => {
    const plain = recorder();
    const quiet = createProgressBar(plain.write, 'ingesting', { interactive: false });
    quiet.update(5, 10);
    quiet.interrupt();
    expect(plain.text()).toBe('');

    const terminal = recorder();
    const drawn = createProgressBar(terminal.write, 'ingesting', { interactive: true, now: terminal.now });
    drawn.update(5, 10);
    drawn.interrupt();
    drawn.interrupt();
    expect(terminal.text()).toBe(`\ringesting [${'#'.repeat(15)}${'-'.repeat(15)}]  50% 5/10\n`);
  });
});
