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

  it('leaves short words, digits and letters outside a-z as they are', () => {
    expect(['is', 'rtx3090', '3090', 'café'].map(porterStem)).toEqual(['is', 'rtx3090', '3090', 'café']);
  });
});
