import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { Dreamer } from '../src/core/ports/dreamer.js';
import { crashTest } from './kill-mid-write.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

/**
 * wt-crash21: maintenance tasks are to resume from their watermarks exactly once after kill -9. The episodes task
 * inserts a window's episode memory in one transaction and moves the channel's watermark past the window in another;
 * the dream task inserts each owner's insights as it goes and moves its one watermark only after the last owner. A
 * process killed (SIGKILL) between those commits leaves work done but not recorded, and the next run does it again.
 */
const { folder, built, isBuilt, killMidWrite } = crashTest('attack21-maintenance');
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

const START = '2024-06-01T00:00:00.000Z';
const minutes = (count: number) => Date.parse(START) + count * 60_000;
/** A time when every window of the seeded messages is closed. */
const LATER = minutes(24 * 60);

/** A fixed dreamer (in the runner's process, and below in this one): one insight on the first two memories it is given, for every owner. */
const dreamerSource = `({
  id: 'fixed-dreamer',
  async dream(input) {
    const ids = input.memories.slice(0, 2).map((memory) => memory.id);
    return [{ content: 'a recurring pattern across ' + ids.join(' and '), category: 'pattern', sourceIds: ids }];
  },
})`;
const fixedDreamer: Dreamer = {
  id: 'fixed-dreamer',
  async dream(input) {
    const ids = input.memories.slice(0, 2).map((memory) => memory.id);
    return [{ content: `a recurring pattern across ${ids.join(' and ')}`, category: 'pattern', sourceIds: ids }];
  },
};

/** A maintenance run in a process of its own, which prints `hook` at the chosen moment and waits to be killed. */
const runner = (hook: string, tasks: string) => `
  const { createSqliteStorage } = await import(${JSON.stringify(built('storage/sqlite/sqlite-storage.js'))});
  const { createEngine } = await import(${JSON.stringify(built('core/create-engine.js'))});
  const { resolvePolicy } = await import(${JSON.stringify(built('core/policy.js'))});
  const { createOfflineEpisodeSummariser } = await import(${JSON.stringify(built('models/offline/offline-episode-summariser.js'))});
  const { createOfflineMemoryMerger } = await import(${JSON.stringify(built('models/offline/offline-memory-merger.js'))});
  const storage = createSqliteStorage({ path: process.argv[1], lockTtlMs: 1500 });
  const dreamer = ${dreamerSource};
  ${hook}
  const mneme = createEngine({
    storage, embedder: null, clock: { now: () => ${LATER} }, logger: { warn: () => {} }, policy: resolvePolicy(),
    summariser: createOfflineEpisodeSummariser(), merger: createOfflineMemoryMerger(), dreamer,
  });
  await mneme.maintain({ tasks: ${tasks}, now: ${LATER} });
  process.stdout.write('finished without the hook\\n');
  setInterval(() => {}, 1000);
`;

const hang = 'await new Promise(() => {});';

/** Seeds `path` with `windows` closed one-hour windows of five messages in each of `channels`. */
async function seed(path: string, channels: string[], windows: number) {
  const engine = await openMaintenanceEngine({ path, start: START });
  engines.push(engine);
  for (const channelId of channels) {
    for (let window = 0; window < windows; window++) {
      for (let index = 0; index < 5; index++) {
        await engine.mneme.ingest({
          channelId,
          sender: `user${index % 2}`,
          content: `in ${channelId} window ${window} we talk about garden item ${index} and the cello`,
          createdAt: new Date(minutes(window * 120 + index * 5)).toISOString(),
        });
      }
    }
  }
  await engine.mneme.whenIdle();
  await engine.mneme.close();
  engines.splice(engines.indexOf(engine), 1);
}

/** The number of memories of `source` that repeat another's content and sources (a step done twice). */
function repeated(path: string, source: string): { total: number; repeated: number } {
  const database = new Database(path, { readonly: true });
  try {
    const rows = database
      .prepare<[string], { content: string; sources: string }>(
        `SELECT content, source_message_ids || '|' || source_ids AS sources FROM memories WHERE source = ?`,
      )
      .all(source);
    const keys = new Set(rows.map((row) => `${row.content}\u0000${row.sources}`));
    return { total: rows.length, repeated: rows.length - keys.size };
  } finally {
    database.close();
  }
}

/** Waits past the killed runner's lock lease (1.5 s), then runs `tasks` to the end in this process. */
async function runAgain(path: string, tasks: Array<'episodes' | 'dream'>) {
  await new Promise((done) => setTimeout(done, 2000));
  const engine = await openMaintenanceEngine({ path, start: START, dreamer: fixedDreamer });
  engines.push(engine);
  const report = await engine.mneme.maintain({ tasks, now: LATER });
  for (const task of tasks) expect(report[task]?.skipped ?? null).toBeNull();
  return report;
}

describe('maintenance killed with SIGKILL between a step and its watermark', () => {
  it('writes no episode twice when the run is killed after an episode is stored and before its watermark moves', {
    timeout: 120_000,
  }, async () => {
    expect(isBuilt(), 'run `npm run build` first').toBe(true);
    const path = join(folder, 'episodes.db');
    await seed(path, ['ops'], 3);
    // The process dies at the first moment the first episode has committed: when its watermark is about to be
    // written on its own, or, once the two commit together, as soon as the insert that wrote both returns.
    const hook = `
      const set = storage.maintenanceState.set.bind(storage.maintenanceState);
      storage.maintenanceState.set = async (channelId, task, change) => {
        if (task === 'episodes' && change && change.watermark !== undefined) {
          process.stdout.write('episode stored\\n');
          ${hang}
        }
        return set(channelId, task, change);
      };
      const insert = storage.memories.insert.bind(storage.memories);
      storage.memories.insert = async (memories, context, options) => {
        const stored = await insert(memories, context, options);
        if (memories.some((memory) => memory.source === 'episode')) {
          process.stdout.write('episode stored\\n');
          ${hang}
        }
        return stored;
      };`;
    await killMidWrite(runner(hook, "['episodes']"), path, 0, 1);
    expect(repeated(path, 'episode')).toEqual({ total: 1, repeated: 0 });
    await runAgain(path, ['episodes']);
    // Three windows, three episodes: the one stored before the kill is not written again.
    expect(repeated(path, 'episode')).toEqual({ total: 3, repeated: 0 });
  });

  it('writes no dream insight twice when the run is killed after its first owner is dreamt about', {
    timeout: 120_000,
  }, async () => {
    expect(isBuilt(), 'run `npm run build` first').toBe(true);
    const path = join(folder, 'dream.db');
    await seed(path, ['ops', 'dev'], 1);
    // Memories of two owners at least (the rooms' exchange memories): the second owner's dream never returns.
    const hook = `
      let calls = 0;
      const dream = dreamer.dream.bind(dreamer);
      dreamer.dream = async (input) => {
        calls++;
        if (calls === 2) {
          process.stdout.write('first owner dreamt\\n');
          ${hang}
        }
        return dream(input);
      };`;
    await killMidWrite(runner(hook, "['dream']"), path, 0, 1);
    const before = repeated(path, 'dream');
    expect(before.total).toBeGreaterThan(0);
    expect(before.repeated).toBe(0);
    await runAgain(path, ['dream']);
    const after = repeated(path, 'dream');
    expect(after.total).toBeGreaterThan(before.total);
    expect(after.repeated).toBe(0);
  });
});
