import { describe, expect, it } from 'vitest';
import type { Memory } from '../types.js';
import {
  factChanges,
  type ReconciliationOptions,
  reconcileFact,
  saysChange,
  statementRelation,
} from './fact-reconciliation.js';

const vocabulary =
  'amber basil cedar delta ember fjord grove heron iris jade kelp lotus maple nutmeg onyx pearl quill raven sage thyme umber'.split(
    ' ',
  );
/**
 * A fact about Oz (the speaker, left out of the overlap) saying words `first` to `last - 1` of a
 * vocabulary without stop words, so overlaps are easy to count.
 */
const words = (first: number, last: number) => `Oz ${vocabulary.slice(first, last).join(' ')}`;

const options: ReconciliationOptions = { threshold: 0.35, speaker: 'Oz', pending: [] };
const fromMessage = (content: string, category = 'fact') => ({ content, category, owner: 'user:oz', messageId: 9 });

/** A memory as reconciliation reads it: Oz's personal fact, cited by message 1. */
function memory(id: number, content: string, overrides: Partial<Memory> = {}) {
  return {
    id,
    content,
    category: 'fact',
    scope: 'personal' as const,
    userId: 'oz',
    channelId: 'dm',
    projectId: null,
    topicId: null,
    importance: 0.5,
    pinned: false,
    sourceMessageIds: [1],
    validFrom: '2024-03-05T10:00:00.000Z',
    supersededBy: null,
    ...overrides,
  };
}

describe('reconcileFact', () => {
  it('updates the closest candidate when its words overlap at least 0.35', () => {
    const exactly = memory(1, words(6, 20));
    const closer = memory(2, words(2, 14));
    const fact = fromMessage(words(0, 13));
    expect(reconcileFact(fact, [exactly], options)).toEqual({ action: 'update', memory: exactly });
    expect(reconcileFact(fact, [exactly, closer], options)).toEqual({ action: 'update', memory: closer });
  });

  it('inserts the fact when the closest candidate overlaps less than 0.35', () => {
    const justBelow = memory(1, words(6, 21));
    expect(reconcileFact(fromMessage(words(0, 13)), [justBelow], options)).toEqual({ action: 'insert' });
  });

  it('inserts the fact when there is no candidate', () => {
    expect(reconcileFact(fromMessage('Oz keeps bees on the roof'), [], options)).toEqual({ action: 'insert' });
  });

  it('never compares a fact with a memory of another owner, however alike', () => {
    const room = memory(1, 'Oz keeps bees on the roof', { scope: 'room' });
    const someoneElse = memory(2, 'Oz keeps bees on the roof', { userId: 'ana' });
    const fact = fromMessage('Oz keeps bees on the roof');
    expect(reconcileFact(fact, [room, someoneElse], options)).toEqual({ action: 'insert' });
  });

  it('leaves the closest candidate alone when it already cites the message', () => {
    const cited = memory(1, 'Oz keeps bees on the roof', { sourceMessageIds: [4, 9] });
    expect(reconcileFact(fromMessage('Oz keeps bees on the roof'), [cited], options)).toEqual({
      action: 'done',
      memory: cited,
    });
  });

  it('updates the first of equally close candidates', () => {
    const first = memory(1, words(0, 4));
    const second = memory(2, words(0, 4));
    expect(reconcileFact(fromMessage(words(0, 4)), [first, second], options)).toEqual({
      action: 'update',
      memory: first,
    });
  });

  it("leaves the speaker's name out of the comparison", () => {
    const known = memory(1, 'Oz Smith keeps cats');
    const fact = fromMessage('Oz Smith keeps bees');
    expect(reconcileFact(fact, [known], { ...options, speaker: 'Oz Smith' })).toEqual({ action: 'insert' });
    expect(reconcileFact(fact, [known], { ...options, speaker: 'Ana' })).toEqual({ action: 'update', memory: known });
  });

  it('leaves "others" out of the comparison, as a group the speaker belongs to is named with it', () => {
    const known = memory(1, 'Oz and others keep cats');
    expect(reconcileFact(fromMessage('Oz and others keep bees'), [known], options)).toEqual({ action: 'insert' });
  });

  it('calls a fact repeated when a pending fact of the same owner says the same, before any candidate', () => {
    const known = memory(1, 'Oz keeps bees on the roof');
    const pending = [{ content: 'Oz keeps bees on the roof', owner: 'user:oz' }];
    const fact = fromMessage('Oz keeps bees on the roof');
    expect(reconcileFact(fact, [known], { ...options, pending })).toEqual({ action: 'repeated' });
    const elsewhere = [{ content: 'Oz keeps bees on the roof', owner: 'room:dm' }];
    expect(reconcileFact(fact, [known], { ...options, pending: elsewhere })).toEqual({
      action: 'update',
      memory: known,
    });
  });
});

describe('reconcileFact with subjects', () => {
  it('never updates a memory about another subject, however many words they share', () => {
    const sam = memory(1, "Sam's team uses PostgreSQL 15.");
    expect(reconcileFact(fromMessage("Lee's team uses PostgreSQL 15."), [sam], options)).toEqual({ action: 'insert' });
    const leeChen = memory(2, 'Lee Chen plays jazz piano every Friday.');
    expect(reconcileFact(fromMessage('Lee Park plays jazz piano every Friday.'), [leeChen], options)).toEqual({
      action: 'insert',
    });
    const mia = memory(3, "Oz's sister Mia works as a nurse in Bergen.");
    expect(reconcileFact(fromMessage("Oz's sister Ada works as a nurse in Bergen."), [mia], options)).toEqual({
      action: 'insert',
    });
    expect(reconcileFact(fromMessage('Oz works as a nurse in Bergen.'), [mia], options)).toEqual({ action: 'insert' });
  });

  it('still dedupes a restatement about the same subject, whatever its case or opening date', () => {
    const sam = memory(1, "Sam's team uses PostgreSQL 15.");
    expect(reconcileFact(fromMessage("sam's team uses postgresql 15 in production"), [sam], options)).toEqual({
      action: 'update',
      memory: sam,
    });
    const hike = memory(2, 'Oz went hiking in the Rondane mountains (mentioned on 1 March 2024).', {
      category: 'event',
    });
    const again = fromMessage('On 5 March 2024 Oz went hiking in the Rondane mountains again.', 'event');
    expect(reconcileFact(again, [hike], options)).toEqual({ action: 'update', memory: hike });
  });

  it('calls a pending fact about another subject no repeat', () => {
    const pending = [{ content: "Sam's team uses PostgreSQL 15.", owner: 'user:oz' }];
    expect(reconcileFact(fromMessage("Lee's team uses PostgreSQL 15."), [], { ...options, pending })).toEqual({
      action: 'insert',
    });
  });
});

describe('reconcileFact with changed facts', () => {
  it('supersedes what a fact says has changed, with change words', () => {
    const vim = memory(1, 'Oz uses Vim for everything.');
    const switched = fromMessage('Oz switched from Vim to VS Code (mentioned on 5 March 2024).', 'event');
    expect(reconcileFact(switched, [vim], options)).toEqual({ action: 'supersede', memory: vim });
    const monday = memory(2, "Oz's standup is on Monday.");
    expect(reconcileFact(fromMessage("Oz's standup moved to Wednesday."), [monday], options)).toEqual({
      action: 'supersede',
      memory: monday,
    });
    const oslo = memory(3, 'Oz lives in Oslo.');
    expect(reconcileFact(fromMessage('Oz now lives in Bergen.'), [oslo], options)).toEqual({
      action: 'supersede',
      memory: oslo,
    });
    const meat = memory(4, 'Oz eats meat.');
    expect(reconcileFact(fromMessage('Oz no longer eats meat.'), [meat], options)).toEqual({
      action: 'supersede',
      memory: meat,
    });
  });

  it('supersedes a similar fact whose value the new one replaces', () => {
    const fifteen = memory(1, "Oz's team runs PostgreSQL 15 in production.");
    expect(reconcileFact(fromMessage("Oz's team runs PostgreSQL 16 in production."), [fifteen], options)).toEqual({
      action: 'supersede',
      memory: fifteen,
    });
  });

  it('updates a restatement that brings no new value, change words or not', () => {
    const switched = memory(1, 'Oz switched from Vim to VS Code.');
    expect(reconcileFact(fromMessage('Oz switched from Vim to VS Code.'), [switched], options)).toEqual({
      action: 'update',
      memory: switched,
    });
    const oslo = memory(2, 'Oz lives in Oslo.');
    expect(reconcileFact(fromMessage('Oz lives in Oslo, Norway.'), [oslo], options)).toEqual({
      action: 'update',
      memory: oslo,
    });
  });

  it('supersedes a similar fact with its words in another order, keeping the older as history', () => {
    const owed = memory(1, 'Alice owes Oz 20 dollars for the concert tickets.');
    expect(reconcileFact(fromMessage('Oz owes Alice 20 dollars for the concert tickets.'), [owed], options)).toEqual({
      action: 'supersede',
      memory: owed,
    });
  });

  it('keeps another event with another value as a new memory, neither updated nor superseded', () => {
    const lee = memory(1, 'Oz met Lee at the climbing gym (mentioned on 1 March 2024).', { category: 'event' });
    const sam = fromMessage('Oz met Sam at the climbing gym (mentioned on 5 March 2024).', 'event');
    expect(reconcileFact(sam, [lee], options)).toEqual({ action: 'insert' });
  });

  it('leaves an event that was no change true, and a memory of another subject alone', () => {
    const visit = memory(1, 'Oz visited Paris in June (mentioned on 1 July 2023).', { category: 'event' });
    expect(reconcileFact(fromMessage('Oz now lives in Paris.'), [visit], options)).toEqual({ action: 'insert' });
    const oslo = memory(2, 'Oz lives in Oslo.');
    expect(reconcileFact(fromMessage('Lee now lives in Bergen.'), [oslo], options)).toEqual({ action: 'insert' });
  });

  it('leaves a superseded memory alone: it is history', () => {
    const vim = memory(1, 'Oz uses Vim for everything.', { supersededBy: 2 });
    expect(reconcileFact(fromMessage('Oz uses Vim for everything.'), [vim], options)).toEqual({ action: 'insert' });
    const cited = memory(3, 'Oz uses Vim for everything.', { supersededBy: 2, sourceMessageIds: [9] });
    expect(reconcileFact(fromMessage('Oz uses Vim for everything.'), [cited], options)).toEqual({
      action: 'done',
      memory: cited,
    });
  });
});

describe('statementRelation', () => {
  const compare = (newer: string, older: string, categories: [string, string] = ['fact', 'fact']) =>
    statementRelation(
      { content: newer, category: categories[0] },
      { content: older, category: categories[1] },
      { threshold: 0.35, ignore: ['oz', 'others'], subject: 'oz' },
    );

  it('tells a change, another event, a restatement and an unrelated statement apart', () => {
    const zed = compare('Oz switched from VS Code to Zed.', 'Oz switched from Vim to VS Code.', ['event', 'event']);
    expect(zed).toBe('change');
    expect(compare('Oz met Sam in Oslo.', 'Oz met Lee in Oslo.', ['event', 'event'])).toBe('another-event');
    expect(compare('Oz loves hiking in the mountains.', 'Oz likes hiking in the mountains.')).toBe('restatement');
    expect(compare('Oz has a cat named Pixel.', 'Oz lives in Oslo.')).toBe('unrelated');
  });

  it('tells a change when the same words come in another order: who does what to whom changed', () => {
    expect(compare('Oz owes Alice 20 dollars.', 'Alice owes Oz 20 dollars.')).toBe('change');
    expect(compare('Oz is allergic to almonds but not peanuts.', 'Oz is allergic to peanuts but not almonds.')).toBe(
      'change',
    );
    expect(compare('Oz met Sam after Lee.', 'Oz met Lee after Sam.', ['event', 'event'])).toBe('another-event');
    expect(compare('Oz owes Alice 20 dollars.', 'Oz owes Alice 20 dollars, (mentioned on 2 May 2024).')).toBe(
      'restatement',
    );
  });

  it('tells a restatement of a list of names or things given in another order', () => {
    expect(compare('Oz likes coffee and tea.', 'Oz likes tea and coffee.')).toBe('restatement');
    expect(compare('Oz speaks German, French and Italian.', 'Oz speaks French, German, and Italian.')).toBe(
      'restatement',
    );
    expect(
      compare('Oz met Sam and Lee at the climbing gym.', 'Oz met Lee and Sam at the climbing gym.', ['event', 'event']),
    ).toBe('restatement');
    expect(compare('Alice paid Lee and Sam back.', 'Lee and Sam paid Alice back.')).toBe('change');
  });

  it('tells a change when one statement says the opposite of the other', () => {
    expect(compare('Oz does not like coffee in the morning.', 'Oz likes coffee in the morning.')).toBe('change');
    expect(compare("Oz's sister Mia doesn't live in Oslo.", "Oz's sister Mia lives in Oslo.")).toBe('change');
    expect(compare('Oz is a fan of horror movies.', 'Oz is not a fan of horror movies.')).toBe('change');
    expect(compare('Oz is not a fan of horror movies at all.', 'Oz is not a fan of horror movies.')).toBe(
      'restatement',
    );
  });

  it('tells no change of a negated statement another one negated like it, nor of a phrase that negates nothing', () => {
    expect(compare('Oz does not eat meat.', 'Oz does not eat meat. Oz does not drink alcohol.')).toBe('restatement');
    expect(compare("Oz doesn't eat red meat and never drinks.", "Oz doesn't eat red meat.")).toBe('restatement');
    expect(compare('Oz likes green tea, not coffee.', 'Oz likes green tea.')).toBe('restatement');
    expect(compare('Oz likes not only green tea but also coffee.', 'Oz likes green tea and coffee.')).toBe(
      'restatement',
    );
    expect(compare('Oz loves strong coffee no matter what.', 'Oz loves strong coffee.')).toBe('restatement');
    expect(
      compare(
        'Oz does not like strong coffee (mentioned on 2 May 2024).',
        'Oz likes strong coffee (mentioned on 1 May 2024).',
      ),
    ).toBe('change');
  });
});

describe('saysChange', () => {
  it('reads change words, but not a "now" that only means at present, nor a negated "quit"', () => {
    expect(saysChange('Oz switched from Vim to VS Code.')).toBe(true);
    expect(saysChange('Oz now lives in Bergen.')).toBe(true);
    expect(saysChange("Oz doesn't drink coffee anymore.")).toBe(true);
    expect(saysChange('Oz is now a nurse.')).toBe(true);
    expect(saysChange('Our team now uses PostgreSQL 16.')).toBe(true);
    expect(saysChange('Oz quit smoking.')).toBe(true);
    expect(saysChange('Oz is tired right now.')).toBe(false);
    expect(saysChange('Oz is fine for now.')).toBe(false);
    expect(saysChange('Oz has been playing for about four months now.')).toBe(false);
    expect(saysChange('Oz is learning German now - tough but fun.')).toBe(false);
    expect(saysChange('Now Oz is ready to help others.')).toBe(false);
    expect(saysChange("Oz won't quit, no matter what.")).toBe(false);
    expect(saysChange('Oz likes Vim.')).toBe(false);
  });
});

describe('factChanges', () => {
  it('cites the message, keeps the higher importance and takes the fact text and category', () => {
    const known = memory(1, 'Oz likes tea', { importance: 0.7 });
    const fact = {
      content: 'Oz prefers green tea',
      category: 'preference',
      importance: 0.6,
      scope: 'personal' as const,
    };
    expect(factChanges(known, fact, { id: 9, saidAt: Date.parse('2024-03-01T10:00:00Z') })).toEqual({
      sourceMessageIds: [1, 9],
      importance: 0.7,
      content: 'Oz prefers green tea',
      category: 'preference',
      sector: 'semantic',
    });
  });

  it('leaves out the same text, and keeps the category of a pinned memory', () => {
    const known = memory(1, 'Oz flies to Lisbon in June', { pinned: true, importance: 0.4 });
    const fact = {
      content: 'Oz flies to Lisbon in June',
      category: 'event',
      importance: 0.8,
      scope: 'personal' as const,
    };
    expect(factChanges(known, fact, { id: 9, saidAt: Date.parse('2024-03-05T10:00:00Z') })).toEqual({
      sourceMessageIds: [1, 9],
      importance: 0.8,
    });
  });

  it('keeps the fuller text when the restatement says less, and takes one that says as much or more', () => {
    const known = memory(1, 'Oz prefers dark mode in every editor and terminal Oz uses.', { importance: 0.5 });
    const fact = (content: string) => ({ content, category: 'fact', importance: 0.5, scope: 'personal' as const });
    const message = { id: 9, saidAt: Date.parse('2024-03-01T10:00:00Z') };
    expect(factChanges(known, fact('Oz prefers dark mode in every editor.'), message)).not.toHaveProperty('content');
    expect(
      factChanges(known, fact('Oz prefers dark mode in every editor and terminal Oz uses, always.'), message),
    ).toMatchObject({ content: 'Oz prefers dark mode in every editor and terminal Oz uses, always.' });
    expect(factChanges(known, fact('Oz really prefers dark mode in every editor.'), message)).not.toHaveProperty(
      'content',
    );
    expect(factChanges(known, fact('Oz prefers dark mode in every terminal and code editor.'), message)).toMatchObject({
      content: 'Oz prefers dark mode in every terminal and code editor.',
    });
  });

  it('moves the time of the memory to the message when it was said later, never earlier', () => {
    const known = memory(1, 'Oz flies to Lisbon in June');
    const fact = {
      content: 'Oz flies to Lisbon in June',
      category: 'fact',
      importance: 0.5,
      scope: 'personal' as const,
    };
    const later = Date.parse('2024-04-01T08:00:00Z');
    expect(factChanges(known, fact, { id: 9, saidAt: later }).validFrom).toBe(later);
    const earlier = Date.parse('2024-01-01T08:00:00Z');
    expect(factChanges(known, fact, { id: 9, saidAt: earlier })).not.toHaveProperty('validFrom');
  });
});
