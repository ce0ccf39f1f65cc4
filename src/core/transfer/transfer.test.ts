import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../../config/create-mneme.js';
import { createFixedClock } from '../../testing.js';
import { isMnemeError } from '../errors.js';
import type { Mneme } from '../mneme.js';

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.close()));
});

async function open(): Promise<Mneme> {
  const mneme = await createMneme({ path: ':memory:', clock: createFixedClock('2026-02-01T10:00:00Z') });
  engines.push(mneme);
  return mneme;
}

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
    const { mneme } = await sample();
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
    expect(report).toMatchObject({ from: 'mneme', messages: 2, memories: 2 });
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
    const newer = [lines[0]?.replace('"version":1', '"version":2') ?? '', ...lines.slice(1)];
    expect((await failure(target.importData(newer))).message).toMatch(/^line 1: .*reads mneme-export version 1 only/);
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
