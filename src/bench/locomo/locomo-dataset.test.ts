import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { normaliseDiaId, parseEvidence, parseLocomo, parseSessionDate } from './locomo-dataset.js';

/** A hand-made conversation: two sessions (a third with a date but no turns), a caption, malformed evidence. */
const tinyLocomo: unknown = JSON.parse(
  readFileSync(new URL('../../../test/fixtures/locomo-tiny.json', import.meta.url), 'utf8'),
);

describe('LoCoMo evidence ids', () => {
  const known = new Set(['D1:1', 'D8:6', 'D9:17', 'D30:5']);

  it('splits an entry on semicolons, commas and whitespace', () => {
    expect(parseEvidence(['D8:6; D9:17'], known)).toEqual(['D8:6', 'D9:17']);
    expect(parseEvidence(['D8:6,D9:17 D1:1'], known)).toEqual(['D8:6', 'D9:17', 'D1:1']);
  });

  it('strips leading zeros', () => {
    expect(normaliseDiaId('D30:05')).toBe('D30:5');
    expect(normaliseDiaId('d08:006')).toBe('D8:6');
    expect(parseEvidence(['D30:05'], known)).toEqual(['D30:5']);
  });

  it('ignores ids that are not in the conversation and keeps each id once', () => {
    expect(parseEvidence(['D', 'D:11:26', 'D2:1', 'D1:1', 'D01:1'], known)).toEqual(['D1:1']);
  });
});

describe('LoCoMo session dates', () => {
  it('reads "1:56 pm on 8 May, 2023" as UTC', () => {
    expect(parseSessionDate('1:56 pm on 8 May, 2023')).toBe(Date.UTC(2023, 4, 8, 13, 56));
    expect(parseSessionDate('12:09 am on 13 September, 2023')).toBe(Date.UTC(2023, 8, 13, 0, 9));
    expect(parseSessionDate('12:30 pm on 1 January, 2024')).toBe(Date.UTC(2024, 0, 1, 12, 30));
  });

  it('refuses text that is not such a date', () => {
    expect(parseSessionDate('yesterday')).toBeNull();
    expect(parseSessionDate('1:56 pm on 8 Mayo, 2023')).toBeNull();
  });
});

describe('a LoCoMo file', () => {
  const [conversation] = parseLocomo(tinyLocomo);

  it('gives the turns in session order, a minute apart from the session date, with captions', () => {
    expect(conversation?.speakers).toEqual(['Ada', 'Bo']);
    expect(conversation?.turns.map((turn) => turn.diaId)).toEqual(['D1:1', 'D1:2', 'D1:3', 'D2:1', 'D2:2']);
    expect(conversation?.turns.map((turn) => new Date(turn.at).toISOString())).toEqual([
      '2023-05-08T13:56:00.000Z',
      '2023-05-08T13:57:00.000Z',
      '2023-05-08T13:58:00.000Z',
      '2023-06-01T10:05:00.000Z',
      '2023-06-01T10:06:00.000Z',
    ]);
    expect(conversation?.turns[2]?.caption).toBe('a photo of a small brown dog');
    expect(conversation?.turns[0]?.caption).toBeNull();
  });

  it('normalises evidence and skips the questions left with none', () => {
    expect(conversation?.questions.map((question) => [question.category, question.evidence])).toEqual([
      [4, ['D1:1']],
      [1, ['D1:2', 'D2:1']],
      [2, ['D2:1']],
      [5, ['D1:3']],
    ]);
    expect(conversation?.skippedQuestions).toBe(1);
  });

  it('is refused with a message when it is not a list of samples', () => {
    expect(() => parseLocomo({ sample_id: 'x' })).toThrow(/not a LoCoMo file/);
  });
});
