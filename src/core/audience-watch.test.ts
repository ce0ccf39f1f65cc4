import { describe, expect, it } from 'vitest';
import { createFixedClock } from '../testing.js';
import { AUDIENCE_WATCH_MS, createAudienceWatch } from './derived-audience.js';
import type { EngineContext } from './engine-context.js';

/** A context whose store answers the watch's one read (the audience marks: none), or fails it while `failing`. */
function watchedContext() {
  const clock = createFixedClock('2026-03-02T10:00:00Z');
  const warnings: string[] = [];
  const state = { looks: 0, failing: false };
  const context = {
    clock,
    logger: { warn: (line: string) => warnings.push(line), info: () => {} },
    storage: {
      maintenanceState: {
        async list() {
          state.looks++;
          if (state.failing) throw new Error('the database is locked');
          return [];
        },
      },
    },
  } as unknown as EngineContext;
  return { context, clock, warnings, state };
}

describe('the audience watch of an engine s reads', () => {
  it('looks for the marks of a stopped process at most once every 10 seconds of the clock, reads at once sharing a look', async () => {
    const { context, clock, state } = watchedContext();
    const watch = createAudienceWatch(context);
    await watch();
    expect(state.looks).toBe(0);
    clock.advance(AUDIENCE_WATCH_MS - 1);
    await watch();
    expect(state.looks).toBe(0);
    clock.advance(1);
    await Promise.all([watch(), watch(), watch()]);
    expect(state.looks).toBe(1);
    await watch();
    expect(state.looks).toBe(1);
    clock.advance(-60_000);
    await watch();
    expect(state.looks).toBe(2);
  });

  it('lets the read go on when a look fails, says so once until a look works, and looks again after 10 seconds', async () => {
    const { context, clock, warnings, state } = watchedContext();
    const watch = createAudienceWatch(context);
    state.failing = true;
    for (let look = 0; look < 3; look++) {
      clock.advance(AUDIENCE_WATCH_MS);
      await expect(watch()).resolves.toBeUndefined();
    }
    expect(state.looks).toBe(3);
    expect(warnings).toEqual([
      'the audience changes a stopped process left are checked again in 10 s: the database is locked',
    ]);
    state.failing = false;
    clock.advance(AUDIENCE_WATCH_MS);
    await watch();
    state.failing = true;
    clock.advance(AUDIENCE_WATCH_MS);
    await watch();
    expect(warnings).toHaveLength(2);
  });
});
