import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';
import { type LoopbackServer, startLoopbackServer } from './loopback-server.js';

const folder = mkdtempSync(join(tmpdir(), 'attack24a-doctor-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

let server: LoopbackServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Ollama answering every embedding with this vector (768 values, as nomic-embed-text has). */
async function ollamaAnswering(value: (position: number) => number): Promise<string> {
  server = await startLoopbackServer((request) => {
    const { input } = request.body as { input: string[] };
    return { json: { embeddings: input.map(() => Array.from({ length: 768 }, (_, position) => value(position))) } };
  });
  return server.url;
}

describe('attack24a: mneme doctor and vectors the engine cannot use', () => {
  const unusable: Record<string, (position: number) => number> = {
    'every value 0': () => 0,
    'a value beyond float32': (position) => (position === 3 ? 1e39 : 0.01),
  };
  for (const [what, value] of Object.entries(unusable)) {
    it(`says the embedder check failed when the model answers a vector with ${what}, as every write then stores no vector`, async () => {
      const url = await ollamaAnswering(value);
      const env = { MNEME_EMBEDDER: 'ollama', MNEME_OLLAMA_URL: url, MNEME_CHAT: 'none' };
      const database = join(folder, `${what.replaceAll(' ', '-')}.db`);
      // The engine refuses the vector: the memory is stored without one.
      const remembered = await runCli(database, ['add', 'Oz keeps bees on the roof'], { env });
      expect(remembered.code).toBe(0);
      expect(remembered.stderr).toMatch(/stored without a vector/);
      const doctor = await runCli(database, ['doctor'], { env });
      expect(doctor.stdout).toMatch(/ {2}check: FAILED: /);
      expect(doctor.stdout).not.toContain('check: ok: embedded');
      expect(doctor.code).toBe(8);
    });
  }
});
