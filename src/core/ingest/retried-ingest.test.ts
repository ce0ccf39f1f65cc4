import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../../config/create-mneme.js';
import { createFixedClock } from '../../testing.js';
import { ErrorCode } from '../errors.js';
import type { Mneme } from '../mneme.js';

const silent = { warn: () => {}, info: () => {} };
const folder = mkdtempSync(join(tmpdir(), 'mneme-retried-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
let open: Mneme[] = [];
afterEach(async () => {
  await Promise.all(open.map((mneme) => mneme.close()));
  open = [];
});

async function engine(path = ':memory:') {
  const mneme = await createMneme({
    path,
    clock: createFixedClock(Date.parse('2024-06-15T12:00:00Z')),
    logger: silent,
  });
  open.push(mneme);
  return mneme;
}

/** Every memory, exchange memories included, as `category: content`. */
async function memories(mneme: Mneme): Promise<string[]> {
  await mneme.whenIdle();
  return (await mneme.list({ limit: 500 })).memories.map((memory) => `${memory.category}: ${memory.content}`).sort();
}

describe('ingest that can be retried', () => {
  it('acknowledges a message stored again under its external id, without appending, extracting or running its command again', async () => {
    const mneme = await engine();
    const fact = { channelId: 'room', sender: 'oz', senderName: 'Oz', content: 'I have two cats called Miso and Tofu' };
    const first = await mneme.ingest({ ...fact, externalId: '$evt-1' });
    const command = await mneme.ingest({
      ...fact,
      content: '/remember I am allergic to peanuts',
      externalId: '$evt-2',
    });
    expect(first).toMatchObject({ duplicate: false, messages: [{ externalId: '$evt-1', duplicate: false }] });
    expect(command.command).not.toBeNull();
    const before = await memories(mneme);
    expect(before.length).toBeGreaterThanOrEqual(3);

    const again = await mneme.ingest({ ...fact, externalId: '$evt-1' });
    const commandAgain = await mneme.ingest({
      ...fact,
      content: '/remember I am allergic to peanuts',
      externalId: '$evt-2',
    });
    expect(again).toMatchObject({
      duplicate: true,
      command: null,
      messages: [{ id: first.messages[0]?.id, duplicate: true }],
    });
    expect(commandAgain).toMatchObject({ duplicate: true, command: null });
    expect(await memories(mneme)).toEqual(before);
    expect(await mneme.turns({ channelId: 'room' })).toHaveLength(2);
  });

  it('adds no second exchange memory for a retried exchange, and answers a user message first stored alone', async () => {
    const mneme = await engine();
    const exchange = {
      channelId: 'dm',
      userId: 'oz',
      userMessage: 'I am moving to Bergen next spring with my partner',
      assistantReply: 'Bergen is lovely in spring, enjoy the move!',
      externalId: 'u-1',
    };
    const first = await mneme.ingestExchange(exchange);
    const before = await memories(mneme);
    expect(before.filter((memory) => memory.startsWith('exchange:'))).toHaveLength(1);
    const again = await mneme.ingestExchange(exchange);
    expect(again.duplicate).toBe(true);
    expect(again.messages.map((message) => message.id)).toEqual(first.messages.map((message) => message.id));
    expect(await memories(mneme)).toEqual(before);

    const alone = await mneme.ingest({
      channelId: 'dm',
      sender: 'oz',
      content: 'What is the weather in Bergen?',
      externalId: 'u-2',
    });
    const answered = await mneme.ingestExchange({
      ...exchange,
      userMessage: 'What is the weather in Bergen?',
      assistantReply: 'Rainy, mostly.',
      externalId: 'u-2',
    });
    expect(answered.duplicate).toBe(false);
    expect(answered.messages.map((message) => [message.duplicate, message.replyTo])).toEqual([
      [true, null],
      [false, alone.messages[0]?.id],
    ]);
    expect(await mneme.turns({ channelId: 'dm' })).toHaveLength(4);
  });

  it('stores a batch run twice once, duplicates inside one batch included', async () => {
    const mneme = await engine();
    const batch = Array.from({ length: 30 }, (_, index) =>
      index % 3 === 0
        ? {
            channelId: 'room',
            userId: 'ann',
            userMessage: `I planted tree number ${index} in the orchard behind the house`,
            assistantReply: `Tree ${index} noted.`,
            externalId: `m-${index}`,
            replyExternalId: `r-${index}`,
          }
        : {
            channelId: 'room',
            sender: 'ann',
            content: `Apple tree ${index} is in bloom this week`,
            externalId: `m-${index}`,
          },
    );
    const first = await mneme.ingestMany([...batch, ...batch.slice(1, 2)]);
    expect(first.map((result) => result.duplicate)).toEqual([...batch.map(() => false), true]);
    const before = await memories(mneme);
    const second = await mneme.ingestMany(batch);
    expect(second.every((result) => result.duplicate)).toBe(true);
    expect(await memories(mneme)).toEqual(before);
    expect(await mneme.turns({ channelId: 'room', count: 50 })).toHaveLength(40);
  });

  it('stores one message when two engines on one file ingest the same external id at once', async () => {
    const path = join(folder, 'race.db');
    const [one, two] = [await engine(path), await engine(path)];
    const message = { channelId: 'room', sender: 'oz', content: 'raced across two engines', externalId: 'evt-race' };
    const results = await Promise.all([one, two, one, two].map((mneme) => mneme.ingest(message)));
    expect(results.filter((result) => !result.duplicate)).toHaveLength(1);
    expect(new Set(results.map((result) => result.messages[0]?.id)).size).toBe(1);
    expect(await one.turns({ channelId: 'room' })).toHaveLength(1);
  });

  it("records a file's progress with the batch it covers; a user may neither record nor read it", async () => {
    const mneme = await engine();
    const file = { path: '/data/chat.jsonl', line: 2, prefixSha256: 'c'.repeat(64) };
    await mneme.ingestMany([{ channelId: 'room', sender: 'oz', content: 'line one' }], { file });
    expect(await mneme.ingestProgress(file.path)).toEqual(file);
    await expect(mneme.ingestMany([], { file: { ...file, line: 0 } })).rejects.toMatchObject({
      code: ErrorCode.InvalidInput,
    });
    const oz = mneme.as({ kind: 'user', userId: 'oz', label: 'oz' });
    await expect(oz.ingestProgress(file.path)).rejects.toMatchObject({ code: ErrorCode.Forbidden });
    await expect(
      oz.ingestMany([{ channelId: 'room', sender: 'oz', content: 'line two' }], { file: { ...file, line: 3 } }),
    ).rejects.toMatchObject({ code: ErrorCode.Forbidden });
    expect(await mneme.ingestProgress(file.path)).toEqual(file);
  });
});
