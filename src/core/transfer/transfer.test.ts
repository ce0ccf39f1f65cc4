import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../../config/create-mneme.js';
import { createFixedClock } from '../../testing.js';
import { isMnemeError } from '../errors.js';
import type { Mneme } from '../mneme.js';

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.close()));
});

/** An engine closed after the test (`keep`: left to the caller, for one that serves several tests). */
async function open(path = ':memory:', keep = false): Promise<Mneme> {
  const mneme = await createMneme({ path, clock: createFixedClock('2026-02-01T10:00:00Z') });
  if (!keep) engines.push(mneme);
  return mneme;
}

/**
 * On PGlite every engine starts a PostgreSQL in WebAssembly, initdb included (3 to 6 s each on an idle machine), and the
 * first start of a test worker also compiles it (6 to 11 s); a case that did both and opened two engines took more than
 * the default 30 s on a loaded machine. So the source engine opens once, in `beforeAll`, and each case's time fits its
 * one start.
 */
const PGLITE_HOOK_MS = 120_000;
const ONE_START_MS = 60_000;

async function collect(lines: AsyncIterable<string>): Promise<string[]> {
  const all: string[] = [];
  for await (const line of lines) all.push(line);
  return all;
}

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!isMnemeError(error)) throw new Error(`expected a MnemeError, got ${String(error)}`);
  return { code: error.code, message: error.message };
}

async function sample(): Promise<{ mneme: Mneme; lines: string[] }> {
  const mneme = await open();
  await mneme.putChannel({ id: 'room', visibility: 'private', members: ['ann', 'bob'] });
  await mneme.ingestExchange({
    channelId: 'room',
    userId: 'ann',
    userMessage: 'I prefer tea',
    assistantReply: 'Noted.',
  });
  await mneme.whenIdle();
  await mneme.remember({ content: 'Bob likes chess', scope: 'personal', userId: 'bob' });
  return { mneme, lines: await collect(mneme.exportData()) };
}

describe('exportData and importData', () => {
  it('leaves out rows written while the export runs, so the file still imports whole', async () => {
    const { mneme, lines: before } = await sample();
    const memoriesBefore = before.filter((line) => line.startsWith('{"type":"memory"')).length;
    const iterator = mneme.exportData()[Symbol.asyncIterator]();
    const lines: string[] = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      lines.push(next.value);
      if (
        next.value.includes('"type":"membership"') &&
        lines.filter((line) => line.includes('membership')).length === 1
      ) {
        await mneme.ingestExchange({
          channelId: 'room',
          userId: 'bob',
          userMessage: 'I moved to Porto',
          assistantReply: 'Nice.',
        });
        await mneme.whenIdle();
        await mneme.remember({ content: 'Written during the export', scope: 'global' });
      }
    }
    const text = lines.join('\n');
    expect(text).not.toContain('Porto');
    expect(text).not.toContain('Written during the export');
    const target = await open();
    const report = await target.importData(lines);
    expect(report).toMatchObject({ from: 'mneme', messages: 2, memories: memoriesBefore });
    expect(memoriesBefore).toBeGreaterThanOrEqual(2);
  });

  it('refuses a record out of order, naming its line, and writes nothing', async () => {
    const { lines } = await sample();
    const channel = lines.findIndex((line) => line.includes('"type":"channel"'));
    const message = lines.findIndex((line) => line.includes('"type":"message"'));
    expect(channel).toBeGreaterThan(0);
    const swapped = lines.filter((_, index) => index !== channel);
    swapped.splice(message, 0, lines[channel] ?? ''); // right after the first message
    const target = await open();
    const refused = await failure(target.importData(swapped));
    expect(refused.code).toBe('INVALID_INPUT');
    expect(refused.message).toMatch(new RegExp(`^line ${message + 1}: a channel record after messages`));
    expect(await target.list()).toMatchObject({ total: 0 });
    expect(await collect(target.exportData())).toHaveLength(3); // header, policy, end
  });

  it('refuses another format version and a reference to a row the file does not hold', async () => {
    const { lines } = await sample();
    const target = await open();
    const newer = [lines[0]?.replace('"version":1', '"version":5') ?? '', ...lines.slice(1)];
    expect((await failure(target.importData(newer))).message).toMatch(
      /^line 1: .*reads mneme-export versions 1 to 4 only/,
    );
    const message = lines.findIndex((line) => line.includes('"type":"message"'));
    const dangling = lines.map((line, index) =>
      index === message + 1 ? line.replace(/"replyTo":\d+/, '"replyTo":999') : line,
    );
    expect((await failure(target.importData(dangling))).message).toMatch(
      new RegExp(`^line ${message + 2}: replyTo names message 999, which is not earlier in the file`),
    );
    expect(await target.list()).toMatchObject({ total: 0 });
  });

  it('lets a user export only their own data and never import', async () => {
    const { mneme, lines } = await sample();
    const bob = mneme.as({ kind: 'user', userId: 'bob', label: 'bob' });
    expect(() => bob.exportData()).toThrow(/exporting every user needs an administrator/);
    expect(() => bob.exportData({ userId: 'ann' })).toThrow(/cannot act for ann/);
    const own = (await collect(bob.exportData({ userId: 'bob' }))).join('\n');
    expect(own).toContain('Bob likes chess');
    expect((await failure(bob.importData(lines))).code).toBe('FORBIDDEN');
  });
});

/** Two lines of a file `mneme ingest` read, appended with the file's progress as the CLI appends them. */
async function ingestFile(mneme: Mneme, path: string): Promise<{ path: string; line: number; prefixSha256: string }> {
  const lines = ['I water the ferns on Sundays', 'The ferns sit by the north window'].map((content) =>
    JSON.stringify({ channelId: 'dm-ann', sender: 'ann', content, createdAt: '2026-01-31T09:00:00.000Z' }),
  );
  const progress = {
    path,
    line: lines.length,
    prefixSha256: createHash('sha256')
      .update(lines.map((line) => `${line}\n`).join(''))
      .digest('hex'),
  };
  await mneme.ingestMany(
    lines.map((line) => JSON.parse(line)),
    { file: progress },
  );
  return progress;
}

const records = (lines: readonly string[]) => lines.map((line) => JSON.parse(line) as { type: string });

describe.each([
  ['SQLite', ':memory:'],
  ['PGlite', 'pglite:memory:'],
])('the file records of mneme ingest in an export on %s', (_store, path) => {
  // Both cases only read the source: one engine serves them.
  let source: Mneme;
  let progress: Awaited<ReturnType<typeof ingestFile>>;
  beforeAll(async () => {
    source = await open(path, true);
    progress = await ingestFile(source, '/data/chat.jsonl');
  }, PGLITE_HOOK_MS);
  afterAll(async () => {
    await source?.close();
  });

  it(
    'travel in a full export as version 2 and are restored, so a resumed ingest continues after them',
    async () => {
      const lines = await collect(source.exportData());
      const full = records(lines);
      expect(full[0]).toMatchObject({ type: 'header', version: 2 });
      expect(full.filter((line) => line.type === 'ingestFile')).toEqual([
        { type: 'ingestFile', ...progress, updatedAt: '2026-02-01T10:00:00.000Z' },
      ]);
      expect(full.at(-2)?.type).toBe('ingestFile');

      const target = await open(path);
      expect(await target.importData(lines)).toMatchObject({ messages: 2, ingestFiles: 1 });
      expect(await target.ingestProgress('/data/chat.jsonl')).toEqual(progress);
      // The next batch of the file is written after the restored record, as --resume writes it.
      const next = { path: '/data/chat.jsonl', line: 3, prefixSha256: 'c'.repeat(64), after: progress.line };
      await target.ingestMany(
        [{ channelId: 'dm-ann', sender: 'ann', content: 'A third line', createdAt: '2026-01-31T09:01:00.000Z' }],
        { file: next },
      );
      expect(await target.ingestProgress('/data/chat.jsonl')).toMatchObject({ line: 3 });
      // And the restored database exports them again as it got them.
      expect(records(await collect(target.exportData())).filter((line) => line.type === 'ingestFile')).toHaveLength(1);
    },
    ONE_START_MS,
  );

  it(
    'stay out of a user export, which stays version 1 and leaves the target without a record',
    async () => {
      const lines = await collect(source.exportData({ userId: 'ann' }));
      const own = records(lines);
      expect(own[0]).toMatchObject({ type: 'header', version: 1, user: 'ann' });
      expect(own.filter((line) => line.type === 'message')).toHaveLength(2);
      expect(own.some((line) => line.type === 'ingestFile')).toBe(false);
      const target = await open(path);
      expect(await target.importData(lines)).toMatchObject({ messages: 2, ingestFiles: 0 });
      expect(await target.ingestProgress('/data/chat.jsonl')).toBeNull();
    },
    ONE_START_MS,
  );
});

describe('an import of ingestFile records', () => {
  async function exported(): Promise<string[]> {
    const source = await open();
    await ingestFile(source, '/data/chat.jsonl');
    return collect(source.exportData());
  }

  it('refuses one in a version 1 file, in a user export and a second one for a path, and writes nothing', async () => {
    const lines = await exported();
    const at = lines.findIndex((line) => line.includes('"type":"ingestFile"'));
    const cases: Array<[string[], RegExp]> = [
      [
        [lines[0]?.replace('"version":2', '"version":1') ?? '', ...lines.slice(1)],
        new RegExp(`^line ${at + 1}: an ingestFile record in a version 1 file`),
      ],
      [
        [lines[0]?.replace('"user":null', '"user":"ann"') ?? '', ...lines.slice(1)],
        new RegExp(`^line ${at + 1}: an ingestFile record in the export of user ann`),
      ],
      [
        [...lines.slice(0, at + 1), lines[at] ?? '', `{"type":"end","records":${lines.length - 1}}`],
        new RegExp(`^line ${at + 2}: a second ingestFile record for /data/chat.jsonl`),
      ],
    ];
    for (const [file, expected] of cases) {
      const target = await open();
      const refused = await failure(target.importData(file));
      expect(refused).toMatchObject({ code: 'INVALID_INPUT' });
      expect(refused.message).toMatch(expected);
      expect(await target.ingestProgress('/data/chat.jsonl')).toBeNull();
      expect(await target.list()).toMatchObject({ total: 0 });
    }
  });
});
