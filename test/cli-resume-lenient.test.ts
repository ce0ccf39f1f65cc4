import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { runCli } from './cli-harness.js';

// Attack (session 5, wt-attack5): `--resume` reads every line up to the recorded one with U+FFFD for bad
// bytes, whatever version recorded it, and hashes the decoded text: two different byte sequences that
// decode to the same text pass the "file unchanged" check.
// Fixed: a record of this version hashes the lines' bytes under a mark of its own, so only a record of an
// older version is compared with the text read leniently; that version's hash cannot tell one bad byte from
// another (the second test records it), and the committed lines are not ingested again either way.
const folder = mkdtempSync(join(tmpdir(), 'mneme-resume-lenient-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const quiet = { warn: () => {}, info: () => {} };
const message = (content: string) => JSON.stringify({ channelId: 'room', sender: 'oz', senderName: 'Oz', content });

async function turnsOf(database: string) {
  const mneme = await createMneme({ path: database, logger: quiet });
  try {
    return (await mneme.turns({ channelId: 'room', count: 50 })).map((turn) => turn.content);
  } finally {
    await mneme.close();
  }
}

describe('attack5: --resume of a file whose committed lines changed bytes', () => {
  it('refuses to resume a file this version ingested strictly when a committed line now holds a bad byte in place of a U+FFFD it held', async () => {
    const database = join(folder, 'strict.db');
    const file = join(folder, 'strict.jsonl');
    // This version ingests the file: line 1 holds a real U+FFFD (valid UTF-8: EF BF BD).
    writeFileSync(file, `${message('price \uFFFD unknown')}\n${message('second')}\n`);
    const first = await runCli(database, ['ingest', file]);
    expect(first.code).toBe(0);
    // The file is edited: the three bytes of U+FFFD become one byte 0xFF (not UTF-8), and a line is added.
    const bytes = readFileSync(file);
    const at = bytes.indexOf(Buffer.from('\uFFFD'));
    const edited = Buffer.concat([
      bytes.subarray(0, at),
      Buffer.from([0xff]),
      bytes.subarray(at + 3),
      Buffer.from(`${message('third')}\n`),
    ]);
    writeFileSync(file, edited);
    const resumed = await runCli(database, ['ingest', file, '--resume']);
    // The file differs from what was committed (its bytes, its size): a changed file is refused with 409 CONFLICT
    // (exit 2 with "changed since an earlier run"), as it is for any other change of a committed line.
    expect(resumed.stderr).toMatch(/changed since an earlier run/);
    expect(await turnsOf(database)).toEqual(['price \uFFFD unknown', 'second']);
  });

  it("resumes an older version's record when one bad byte of a committed line became another (its hash cannot tell)", async () => {
    const database = join(folder, 'latin1.db');
    const file = join(folder, 'latin1.jsonl');
    // A Latin-1 line 1 ("café"): this version refuses it, so line 1 is committed by hand the way a version
    // before the UTF-8 check would have (the decoded text's hash), by running resume over a lenient record.
    const latin1 = (content: string) => Buffer.from(message(content), 'latin1');
    writeFileSync(file, Buffer.concat([latin1('café'), Buffer.from('\n')]));
    const { createHash } = await import('node:crypto');
    const read = readFileSync(file, 'utf8').split('\n')[0] ?? '';
    const earlier = await createMneme({ path: database, logger: quiet });
    try {
      await earlier.ingestMany([JSON.parse(read)], {
        file: { path: file, line: 1, prefixSha256: createHash('sha256').update(`${read}\n`).digest('hex') },
      });
    } finally {
      await earlier.close();
    }
    // Now the file's first line says "cafè" (0xE8 instead of 0xE9): a different file.
    writeFileSync(file, Buffer.concat([latin1('cafè'), Buffer.from('\n'), Buffer.from(`${message('next')}\n`)]));
    const resumed = await runCli(database, ['ingest', file, '--resume']);
    expect(resumed.code).toBe(0);
    expect(await turnsOf(database)).toEqual(['caf\uFFFD', 'next']);
  });
});
