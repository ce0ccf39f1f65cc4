import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import type { Memory } from '../src/core/types.js';
import { createFixedClock } from '../src/testing.js';

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((mneme) => mneme.close()));
});

/** An engine as a new user gets it: SQLite in memory, the offline extractor, no embedding model. */
async function open(): Promise<Mneme> {
  const mneme = await createMneme({ path: ':memory:', clock: createFixedClock('2026-11-30T09:00:00Z') });
  engines.push(mneme);
  return mneme;
}

/** Oz says each line in the channel, a day apart from 1 March 2024. */
async function ozSays(mneme: Mneme, channelId: string, ...lines: string[]): Promise<void> {
  for (const [index, content] of lines.entries()) {
    const createdAt = new Date(Date.parse('2024-03-01T10:00:00Z') + index * 86_400_000).toISOString();
    await mneme.ingest({ channelId, sender: 'oz', senderName: 'Oz', content, createdAt });
  }
  await mneme.whenIdle();
}

async function facts(mneme: Mneme): Promise<Memory[]> {
  const { memories } = await mneme.list({ limit: 100 });
  return memories.filter((memory) => memory.category !== 'exchange').reverse();
}

describe('a fact that changes', () => {
  it('puts the newer statement first and keeps the older one, marked superseded, for "before" questions', async () => {
    const mneme = await open();
    await ozSays(mneme, 'dm-oz', 'I use Vim for everything', 'I switched from Vim to VS Code');
    const [vim, vsCode, ...others] = await facts(mneme);
    expect(others).toEqual([]);
    expect(vim).toMatchObject({ content: 'Oz uses Vim for everything.', supersededBy: vsCode?.id, archivedAt: null });
    expect(vsCode).toMatchObject({
      content: expect.stringContaining('Oz switched from Vim to VS Code'),
      supersededBy: null,
    });
    expect(await mneme.history(vim?.id ?? 0)).toHaveLength(1);
    expect(
      (await mneme.links(vsCode?.id ?? 0)).map((link) => [link.sourceId, link.targetId, link.type]),
    ).toContainEqual([vsCode?.id, vim?.id, 'supersedes']);

    const viewer = { userId: 'oz', channelId: 'dm-oz' };
    const now = await mneme.recall({ query: 'which editor does Oz use', viewer });
    expect(now.hits[0]?.memory.id).toBe(vsCode?.id);
    const older = now.hits.find((hit) => hit.memory.id === vim?.id);
    expect(older?.memory.supersededBy).toBe(vsCode?.id);
    expect(older?.breakdown.superseded).toBe(0.8);

    const before = await mneme.recall({ query: 'which editor did Oz use before', viewer });
    expect(before.hits.map((hit) => hit.memory.id)).toContain(vim?.id);
  });

  it('does the same for a fact of the room', async () => {
    const mneme = await open();
    await ozSays(mneme, 'team-room', 'our standup is on Monday', 'our standup moved to Wednesday');
    const [monday, wednesday] = await facts(mneme);
    expect(monday).toMatchObject({ content: "Oz's standup is on Monday.", scope: 'room', supersededBy: wednesday?.id });
    expect(wednesday).toMatchObject({ content: "Oz's standup moved to Wednesday.", scope: 'room', supersededBy: null });
    const { hits } = await mneme.recall({ query: 'when is our standup', viewer: { channelId: 'team-room' } });
    expect(hits[0]?.memory.id).toBe(wednesday?.id);
    expect(hits.map((hit) => hit.memory.id)).toContain(monday?.id);
  });

  it('still updates a restatement in place, a version kept, with nothing superseded', async () => {
    const mneme = await open();
    await ozSays(mneme, 'dm-oz', 'I prefer dark mode in every editor', 'I really prefer dark mode in every editor');
    const [memory, ...others] = await facts(mneme);
    expect(others).toEqual([]);
    expect(memory).toMatchObject({ content: 'Oz really prefers dark mode in every editor.', supersededBy: null });
    expect((await mneme.history(memory?.id ?? 0)).map((version) => version.action)).toEqual(['create', 'update']);
  });

  it('keeps the details of a fact when a restatement says less', async () => {
    const mneme = await open();
    await ozSays(
      mneme,
      'dm-oz',
      'I prefer dark mode in every editor and terminal I use',
      'I really prefer dark mode in every editor',
    );
    const [memory, ...others] = await facts(mneme);
    expect(others).toEqual([]);
    expect(memory).toMatchObject({
      content: 'Oz prefers dark mode in every editor and terminal Oz uses.',
      sourceMessageIds: [expect.any(Number), expect.any(Number)],
    });
    const { hits } = await mneme.recall({ query: 'dark mode in the terminal', viewer: { userId: 'oz' } });
    expect(hits[0]?.memory.id).toBe(memory?.id);
  });

  it('reads the same words in another order as a change, not a restatement: the older stays findable', async () => {
    const mneme = await open();
    await ozSays(
      mneme,
      'dm-oz',
      'I am allergic to peanuts but not to almonds',
      'I am allergic to almonds but not to peanuts',
    );
    const [peanuts, almonds, ...others] = await facts(mneme);
    expect(others).toEqual([]);
    expect(peanuts).toMatchObject({
      content: 'Oz is allergic to peanuts but not to almonds.',
      supersededBy: almonds?.id,
    });
    expect(almonds).toMatchObject({ content: 'Oz is allergic to almonds but not to peanuts.', supersededBy: null });
    const { hits } = await mneme.recall({ query: 'what is Oz allergic to', viewer: { userId: 'oz' } });
    expect(hits[0]?.memory.id).toBe(almonds?.id);
    expect(hits.map((hit) => hit.memory.id)).toContain(peanuts?.id);
  });

  it('reads a statement that says the opposite as a change: the newer first, the older kept', async () => {
    const mneme = await open();
    await ozSays(mneme, 'dm-oz', 'I really like coffee in the morning', 'I do not like coffee in the morning');
    const [likes, not, ...others] = await facts(mneme);
    expect(others).toEqual([]);
    expect(likes).toMatchObject({ content: 'Oz really likes coffee in the morning.', supersededBy: not?.id });
    expect(not).toMatchObject({ content: 'Oz does not like coffee in the morning.', supersededBy: null });
    const { hits } = await mneme.recall({ query: 'does Oz like coffee', viewer: { userId: 'oz' } });
    expect(hits[0]?.memory.id).toBe(not?.id);
  });

  it('makes the older statement current again when the newer one is forgotten', async () => {
    const mneme = await open();
    await ozSays(mneme, 'dm-oz', 'I use Vim for everything', 'I switched from Vim to VS Code');
    const [vim, vsCode] = await facts(mneme);
    await mneme.forget(vsCode?.id ?? 0);
    expect((await mneme.get(vim?.id ?? 0)).supersededBy).toBeNull();
    await mneme.restore(vsCode?.id ?? 0);
    expect((await mneme.get(vim?.id ?? 0)).supersededBy).toBe(vsCode?.id);
  });

  it('reads a move as a change of where someone lives, and moving a meeting as nothing of the kind', async () => {
    const mneme = await open();
    await ozSays(mneme, 'dm-oz', 'I live in Oslo', 'I moved the weekly meeting to Friday', 'I moved to Bergen');
    const [oslo, meeting, bergen, ...others] = await facts(mneme);
    expect(others).toEqual([]);
    expect(oslo).toMatchObject({ content: 'Oz lives in Oslo.', supersededBy: bergen?.id });
    expect(meeting).toMatchObject({ content: expect.stringContaining('meeting to Friday'), supersededBy: null });
    expect(bergen).toMatchObject({ content: expect.stringContaining('Oz moved to Bergen'), supersededBy: null });
  });

  it('reads two members\' "our standup" in one room as one standup that changed', async () => {
    const mneme = await open();
    await ozSays(mneme, 'team-room', 'our standup is on Monday');
    await mneme.ingest({
      channelId: 'team-room',
      sender: 'lee',
      senderName: 'Lee',
      content: 'our standup moved to Wednesday',
      createdAt: '2024-03-05T10:00:00Z',
    });
    await mneme.whenIdle();
    const [monday, wednesday, ...others] = await facts(mneme);
    expect(others).toEqual([]);
    expect(monday).toMatchObject({ content: "Oz's standup is on Monday.", supersededBy: wednesday?.id });
    expect(wednesday).toMatchObject({ content: "Lee's standup moved to Wednesday.", supersededBy: null });
  });
});

describe('a value that changes in other words', () => {
  const changes: ReadonlyArray<[older: string, newer: string, question: string]> = [
    ['My favorite color is blue', 'Actually my favorite color is green now', 'what is the favorite color of Oz'],
    ['My manager is Dana', 'My new manager is Lee', 'who is the manager of Oz'],
    ['I work at Acme as a designer', 'I just started a new job at Globex', 'where does Oz work'],
    ['I drive a Honda Civic', 'I sold my Honda and bought a Tesla', 'what car does Oz drive'],
    ['I am learning Spanish', 'I gave up Spanish and started learning Japanese', 'what language is Oz learning'],
    ['My phone is a Pixel 6', 'I upgraded my phone to an iPhone 15', 'what phone does Oz have'],
    ['I go running every morning', 'I stopped running because of my knee, I swim now', 'what exercise does Oz do'],
    ['My sister Mia lives in Oslo', 'Mia moved from Oslo to Rome', 'where does Mia live'],
    ['I live with my parents', 'I moved into my own apartment', 'where does Oz live'],
    ['I weigh 80 kilos', "I'm down to 75 kilos", 'how much does Oz weigh'],
    ['My password manager is LastPass', 'I moved from LastPass to Bitwarden', 'which password manager does Oz use'],
    ['My daughter is 5 years old', 'My daughter just turned 6', 'how old is the daughter of Oz'],
    ["I'm training for a 10k race", "I'm training for a marathon now", 'what is Oz training for'],
    ['I play guitar in a band called Echo', 'I left Echo and joined a band called Drift', 'which band does Oz play in'],
    ['My favourite food is sushi', 'These days my favourite food is ramen', 'what is the favourite food of Oz'],
    ['Our office is on the third floor', 'We moved our office to the fifth floor', 'which floor is the office on'],
  ];
  for (const [older, newer, question] of changes) {
    it(`reads "${newer}" as a change of "${older}": the newer first, the older kept and marked`, async () => {
      const mneme = await open();
      await ozSays(mneme, 'dm-oz', older, newer);
      const [before, after, ...others] = await facts(mneme);
      expect(others).toEqual([]);
      expect(after?.supersededBy).toBeNull();
      expect(before?.supersededBy).toBe(after?.id);
      const { hits } = await mneme.recall({ query: question, viewer: { userId: 'oz', channelId: 'dm-oz' } });
      expect(hits.map((hit) => hit.memory.id).filter((id) => id === before?.id || id === after?.id)).toEqual([
        after?.id,
        before?.id,
      ]);
    });
  }

  const noChanges: ReadonlyArray<[first: string, second: string]> = [
    ['My kids are great with animals', 'My kids are at school until three'],
    ['My favorite band is Muse', 'My favorite band is also Radiohead'],
    ['My favorite color is blue', 'My favorite color is also green'],
    ['I love Spanish food', 'I stopped by the bakery on the way home'],
    ['I am reading a book about cats', 'I bought a new book about birds'],
    ['I work at Acme on the data team', 'I worked at Google before joining Acme'],
    ['My sister Mia lives in Oslo', 'I moved from Oslo to Rome'],
    [
      'On another note, my little dudes got a new tank',
      'On another note, I just upgraded some of my equipment at home',
    ],
    ['My sister is a nurse', 'My sister is in Paris this week'],
    ['My son is 5 years old', 'My son is at camp in Maine'],
    ['Our standup is on Monday', 'Our standup is at 10am'],
    ['I live in Oslo', 'I lived in Paris for two years as a student'],
    ['I work at Acme as a designer', 'I worked at Google for five years after college'],
    ['I am reading a book about cats', 'I stopped reading the news every morning'],
    ['My best friend lives in Oslo', 'I moved from Oslo to Rome'],
    ['My best friend is in Oslo', 'I moved from Oslo to Rome'],
    ['My grandson lives in Oslo', 'I moved from Oslo to Rome'],
    ['My daughter plays soccer on Saturdays', 'My daughter turned 7 today'],
    ['My mom lives in Oslo', 'I moved to Bergen with help from my mom'],
    ['My brother works at Acme', 'I joined Globex, thanks to my brother'],
    ['My phone is a Pixel 6', 'I switched my phone to dark mode'],
  ];
  for (const [first, second] of noChanges) {
    it(`keeps "${first}" current beside "${second}"`, async () => {
      const mneme = await open();
      await ozSays(mneme, 'dm-oz', first, second);
      const memories = await facts(mneme);
      expect(memories.length).toBeGreaterThanOrEqual(2);
      expect(memories.map((memory) => memory.supersededBy)).toEqual(memories.map(() => null));
    });
  }
});

describe('consolidation of a fact that changed', () => {
  it('never merges the superseded memory, and hands it to the merge of the newer one', async () => {
    const mneme = await open();
    await ozSays(mneme, 'dm-oz', 'I use Vim for everything', 'I switched from Vim to VS Code');
    const [vim, vsCode] = await facts(mneme);
    const again = await mneme.remember({
      content: 'Oz switched from Vim to VS Code last spring',
      scope: 'personal',
      userId: 'oz',
      category: 'event',
    });
    expect(await mneme.maintain({ tasks: ['consolidate'] })).toMatchObject({ consolidate: { clusters: 1, merged: 2 } });
    const [older, merged, ...others] = await facts(mneme);
    expect(others).toEqual([]);
    expect(merged).toMatchObject({ source: 'consolidation', sourceIds: [vsCode?.id, again.id] });
    expect(merged?.validFrom).toBe(again.validFrom);
    expect(older).toMatchObject({ id: vim?.id, supersededBy: merged?.id, archivedAt: null });
    const links = await mneme.links(merged?.id ?? 0);
    expect(links.map((link) => [link.sourceId, link.targetId, link.type])).toContainEqual([
      merged?.id,
      vim?.id,
      'supersedes',
    ]);
  });
});

describe('facts about different people', () => {
  it('are stored apart however alike, and consolidation never merges them', async () => {
    const mneme = await open();
    await mneme.putChannel({ id: 'town-square', visibility: 'public' });
    await ozSays(
      mneme,
      'town-square',
      "Sam's team uses PostgreSQL 15",
      "Lee's team uses PostgreSQL 15",
      "Sam's team uses PostgreSQL 15",
      "Lee's team uses PostgreSQL 15",
    );
    const stored = await facts(mneme);
    expect(stored.map((memory) => memory.content)).toEqual([
      "Sam's team uses PostgreSQL 15.",
      "Lee's team uses PostgreSQL 15.",
    ]);
    for (const memory of stored) expect(await mneme.history(memory.id)).toHaveLength(1);
    await mneme.maintain({ tasks: ['consolidate'] });
    expect((await facts(mneme)).map((memory) => memory.id)).toEqual(stored.map((memory) => memory.id));
  });
});

describe('facts said with "we" or "our"', () => {
  it('stay in the room even in a public channel and when they name infrastructure', async () => {
    const mneme = await open();
    await mneme.putChannel({ id: 'town-square', visibility: 'public' });
    await ozSays(
      mneme,
      'town-square',
      'Our team uses PostgreSQL 15',
      'The staging server runs on port 8080 behind nginx',
    );
    expect((await facts(mneme)).map((memory) => [memory.content, memory.scope])).toEqual([
      ["Oz's team uses PostgreSQL 15.", 'room'],
      ['The staging server runs on port 8080 behind nginx.', 'global'],
    ]);
  });
});
