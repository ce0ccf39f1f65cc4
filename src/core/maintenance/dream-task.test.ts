import { afterEach, describe, expect, it } from 'vitest';
import { type MaintenanceEngine, openMaintenanceEngine } from '../../../test/maintenance-engine.js';
import type { Dreamer, DreamInput } from '../ports/dreamer.js';

const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

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

  it('writes higher-level memories in the scope they came from, with the memories they rest on', async () => {
    const dreamer = createPatternDreamer();
    const engine = await openMaintenanceEngine({ dreamer });
    engines.push(engine);
    const oz = { scope: 'personal', userId: 'oz' } as const;
    const tea = await engine.mneme.remember({ content: 'Oz ordered tea on Monday', ...oz });
    const again = await engine.mneme.remember({ content: 'Oz ordered tea on Wednesday', ...oz });
    await engine.mneme.remember({ content: 'Oz ordered tea on Friday', ...oz, category: 'event' });
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
      sourceIds: [tea.id, again.id],
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
});
