import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createMneme } from './create-mneme.js';

const packageVersion = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

async function header(lines: AsyncIterable<string>): Promise<Record<string, unknown>> {
  for await (const line of lines) return JSON.parse(line) as Record<string, unknown>;
  throw new Error('the export wrote no line');
}

describe('an export written by the library', () => {
  it("names the mneme version that wrote it in its header, as docs/export-format.md says, and as a user's view", async () => {
    const mneme = await createMneme({ path: ':memory:' });
    try {
      await mneme.remember({ content: 'Ann keeps bees', scope: 'personal', userId: 'ann' });
      expect(await header(mneme.exportData())).toMatchObject({ type: 'header', mneme: packageVersion });
      const ann = mneme.as({ kind: 'user', userId: 'ann', label: 'ann' });
      expect(await header(ann.exportData({ userId: 'ann' }))).toMatchObject({ user: 'ann', mneme: packageVersion });
      expect(await header(mneme.exportData({ mnemeVersion: '9.9.9' }))).toMatchObject({ mneme: '9.9.9' });
    } finally {
      await mneme.close();
    }
  });
});
