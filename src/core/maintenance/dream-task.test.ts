import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type MaintenanceEngine, openMaintenanceEngine } from '../../../test/maintenance-engine.js';
import type { Dreamer, DreamInput } from '../ports/dreamer.js';
import { DREAM_OWNER_TASK } from './dream-task.js';

const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});
const folder = mkdtempSync(join(tmpdir(), 'mneme-dream-task-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** A dreamer that finds one pattern in whatever it is shown, citing the first two memories and an id it was not shown. */
function createPatternDreamer(): Dreamer & { inputs: DreamInput[] } {
  const inputs: DreamInput[] = [];
  return {
    id: 'scripted',
    inputs,
    async dream(input) {
      inputs.push(input);
      const [first, second] = input.memories;
      return [
        {
          content: `Pattern across ${input.memories.length} memories`,
          category: 'pattern',
          sourceIds: [first?.id ?? 0, second?.id ?? 0, 9999],
        },
        { content: 'An insight with no evidence', category: 'pattern', sourceIds: [9999] },
      ];
    },
  };
}

async function dream(engine: MaintenanceEngine) {
  const report = await engine.mneme.maintain({ tasks: ['dream'] });
  if (!report.dream) throw new Error('no dream report');
  return report.dream;
}

describe('the dream task', () => {
  it('is skipped without a chat model, and keeps its watermark for when one is configured', async () => {
    const engine = await openMaintenanceEngine();
    engines.push(engine);
    await engine.mneme.remember({ content: 'Oz orders tea at every meeting' });
    expect(await dream(engine)).toEqual({ owners: 0, insights: 0, skipped: 'no chat model configured' });
    expect(await engine.storage.maintenanceState.get('', 'dream')).toBeNull();
  });

  it('writes higher-level memories in the scope they came from, built on every memory the dreamer was shown', async () => {
    const dreamer = createPatternDreamer();
    const engine = await openMaintenanceEngine({ dreamer });
    engines.push(engine);
    const oz = { scope: 'personal', userId: 'oz' } as const;
    const tea = await engine.mneme.remember({ content: 'Oz ordered tea on Monday', ...oz });
    const again = await engine.mneme.remember({ content: 'Oz ordered tea on Wednesday', ...oz });
    const friday = await engine.mneme.remember({ content: 'Oz ordered tea on Friday', ...oz, category: 'event' });
    await engine.mneme.remember({ content: 'Mia likes coffee', scope: 'personal', userId: 'mia' });

    expect(await dream(engine)).toEqual({ owners: 1, insights: 1, skipped: null });
    expect(dreamer.inputs).toHaveLength(1);
    expect(dreamer.inputs[0]?.scope).toBe('personal');
    expect(dreamer.inputs[0]?.memories.map((memory) => memory.content)).toEqual([
      'Oz ordered tea on Monday',
      'Oz ordered tea on Wednesday',
      'Oz ordered tea on Friday',
    ]);
    const [insight] = (await engine.mneme.list({ viewer: { userId: 'oz' }, limit: 1 })).memories;
    expect(insight).toMatchObject({
      content: 'Pattern across 3 memories',
      category: 'pattern',
      scope: 'personal',
      userId: 'oz',
      source: 'dream',
      // The dreamer named the first two as its evidence; it read the third too (ADR 46).
      sourceIds: [tea.id, again.id, friday.id],
    });
    expect(await engine.mneme.list({ viewer: { userId: 'mia' }, category: 'pattern' })).toMatchObject({ total: 0 });
  });

  it('reflects only on memories newer than last_dream, never on its own', async () => {
    const dreamer = createPatternDreamer();
    const engine = await openMaintenanceEngine({ dreamer });
    engines.push(engine);
    for (const day of ['Monday', 'Tuesday', 'Wednesday']) await engine.mneme.remember({ content: `Standup on ${day}` });
    expect(await dream(engine)).toMatchObject({ owners: 1, insights: 1 });
    expect((await engine.storage.maintenanceState.get('', 'dream'))?.watermark).toBe(3);
    // The next run passes over the insight it wrote (id 4) without dreaming about it.
    expect(await dream(engine)).toEqual({ owners: 0, insights: 0, skipped: null });
    expect((await engine.storage.maintenanceState.get('', 'dream'))?.watermark).toBe(4);
    expect(dreamer.inputs).toHaveLength(1);
  });

  it('finishes a run that stopped after some owners, without dreaming about those owners again', async () => {
    const path = join(folder, 'stopped.db');
    const dreamer = createPatternDreamer();
    // While the second owner is dreamt about, the file starts refusing new memories (a full disk, say): the
    // run fails there, as a process killed at that moment stops, after the first owner's insights.
    const reflect = dreamer.dream.bind(dreamer);
    dreamer.dream = async (input) => {
      if (dreamer.inputs.length === 1) {
        const other = new Database(path);
        other.exec(`CREATE TRIGGER refuse BEFORE INSERT ON memories BEGIN SELECT RAISE(ABORT, 'disk full'); END`);
        other.close();
      }
      return reflect(input);
    };
    const engine = await openMaintenanceEngine({ path, dreamer });
    engines.push(engine);
    for (const userId of ['oz', 'mia']) {
      for (const day of ['Monday', 'Tuesday', 'Wednesday']) {
        await engine.mneme.remember({ content: `${userId} ordered tea on ${day}`, scope: 'personal', userId });
      }
    }
    const latest = await engine.storage.maintenance.latestMemoryId();
    await expect(dream(engine)).rejects.toMatchObject({ code: 'STORE_FAILED' });
    expect(dreamer.inputs.map((input) => input.memories[0]?.content)).toEqual([
      'oz ordered tea on Monday',
      'mia ordered tea on Monday',
    ]);
    expect(await engine.storage.maintenanceState.get('', 'dream')).toBeNull();
    // The first owner's record, stored with its insight: the run's last memory id.
    expect((await engine.storage.maintenanceState.list(DREAM_OWNER_TASK)).map((row) => row.watermark)).toEqual([
      latest,
    ]);

    const other = new Database(path);
    other.exec('DROP TRIGGER refuse');
    other.close();
    // A memory written meanwhile belongs to the next run: the stopped run is finished as it began.
    await engine.mneme.remember({ content: 'oz ordered tea on Thursday', scope: 'personal', userId: 'oz' });
    expect(await dream(engine)).toEqual({ owners: 1, insights: 1, skipped: null });
    expect(dreamer.inputs.map((input) => input.memories[0]?.content)).toEqual([
      'oz ordered tea on Monday',
      'mia ordered tea on Monday',
      'mia ordered tea on Monday',
    ]);
    expect(dreamer.inputs[2]?.memories).toHaveLength(3);
    const insights = (await engine.storage.maintenance.listAfter(0, 100)).filter((memory) => memory.source === 'dream');
    expect(insights.map((memory) => memory.userId)).toEqual(['oz', 'mia']);
    expect(await engine.storage.maintenanceState.get('', 'dream')).toMatchObject({ watermark: latest });
    expect(await engine.storage.maintenanceState.list(DREAM_OWNER_TASK)).toEqual([]);
  });
});
