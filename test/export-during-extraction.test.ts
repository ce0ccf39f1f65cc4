import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import type { FactExtractor } from '../src/core/ports/fact-extractor.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createFixedClock } from '../src/testing.js';

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.close()));
});

async function open(path: string, extractor?: FactExtractor): Promise<Mneme> {
  const mneme = await createMneme({
    path,
    clock: createFixedClock('2026-02-01T10:00:00Z'),
    ...(extractor ? { extractor } : {}),
  });
  engines.push(mneme);
  return mneme;
}

const contents = async (mneme: Mneme) => (await mneme.list({ userId: 'ann' })).memories.map((memory) => memory.content);

// In memory the export reads a copy of the database; in a file, a second connection that holds a read transaction.
describe.each([
  ['in memory', () => ':memory:'],
  ['in a file', () => join(mkdtempSync(join(tmpdir(), 'mneme-export-')), 'mneme.db')],
])('an export taken while extraction runs, %s', (_where, path) => {
  it('holds no watermark past the memories it holds, so the import extracts that message', async () => {
    // The offline extractor as a model would be (one message a transaction), held back for a message about Porto until the test lets it go.
    const offline = createOfflineExtractor();
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const extractor: FactExtractor = {
      id: offline.id,
      extract: async (input) => {
        if (input.userMessage.includes('Porto')) await gate;
        return offline.extract(input);
      },
    };
    const source = await open(path(), extractor);
    await source.putChannel({ id: 'room', visibility: 'private', members: ['ann'] });
    await source.ingest({ channelId: 'room', sender: 'ann', content: 'I have a cat named Miso' });
    await source.whenIdle();
    await source.ingest({ channelId: 'room', sender: 'ann', content: 'I moved to Porto last year' });

    // The export reads what it holds before its first line; the Porto message is stored, its facts not yet.
    const iterator = source.exportData()[Symbol.asyncIterator]();
    const lines: string[] = [];
    const header = await iterator.next();
    if (!header.done) lines.push(header.value);
    release();
    await source.whenIdle();
    expect(await contents(source)).toContain('Ann moved to Porto in 2025.');
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) lines.push(next.value);
    expect(lines.join('\n')).not.toContain('Ann moved to Porto');

    const target = await open(':memory:');
    await target.importData(lines);
    await target.whenIdle();
    const restored = await contents(target);
    expect(restored).toContain('Ann moved to Porto in 2025.');
    expect(restored.filter((content) => content.includes('Miso'))).toHaveLength(
      (await contents(source)).filter((content) => content.includes('Miso')).length,
    );
  });
});
