import { describe, expect, it } from 'vitest';
import { porterStem } from './porter-stem.js';

describe('porterStem', () => {
  it.each([
    ['caresses', 'caress'],
    ['ponies', 'poni'],
    ['agreed', 'agre'],
    ['hopping', 'hop'],
    ['filing', 'file'],
    ['happy', 'happi'],
    ['relational', 'relat'],
    ['editors', 'editor'],
    ['moved', 'move'],
    ['moving', 'move'],
    ['generalization', 'gener'],
    ['adoption', 'adopt'],
  ])('stems %s to %s, as the porter tokenizer does', (word, stem) => {
    expect(porterStem(word)).toBe(stem);
  });

  it('leaves short words, numbers and letters outside a-z as they are', () => {
    expect(['is', 'rtx3090', '3090', 'café'].map(porterStem)).toEqual(['is', 'rtx3090', '3090', 'café']);
  });

  it('stems words with digits as the porter tokenizer does, a digit counting as a consonant', () => {
    expect(['4ms', 'utf8s', 'a1ing', 'x9ed', '12s'].map(porterStem)).toEqual(['4m', 'utf8', 'a1', 'x9ed', '12']);
  });

  it('takes sses, ies and eed as suffixes of longer words only, as the porter tokenizer does', () => {
    expect(['sses', 'ies', 'eed', 'ties', 'feed'].map(porterStem)).toEqual(['sse', 'ie', 'e', 'ti', 'feed']);
  });
});
