import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '..');

/** The README's "try it without a key" snippet of the AI SDK section, as a reader copies it. */
function trySnippet(): string {
  const readme = readFileSync(resolve(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Use it from an AI SDK app'));
  const start = section.indexOf('```js\n', section.indexOf('Try it without a key'));
  const end = section.indexOf('\n```', start);
  expect(start, 'the README has the snippet').toBeGreaterThan(0);
  return section.slice(start + '```js\n'.length, end);
}

describe("the README's AI SDK snippet", () => {
  it('runs in the clone with plain Node: the model is given the memory and the exchange is recorded', async () => {
    // Run from the clone's root, as the README says: `mneme` resolves to the package itself (dist/, built by npm test).
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', trySnippet()], { cwd: root });
    const [block, turns] = stdout.split('\n[\n');
    expect(block).toContain('[Relevant Memories]');
    expect(block).toContain('"Oz prefers green tea in the morning"');
    expect(turns).toMatch(/role: 'user',\n\s+content: 'What should I drink this morning\?'/);
    expect(turns?.match(/role: 'assistant'/g)).toHaveLength(1);
  });
});
