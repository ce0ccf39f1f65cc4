import { describe, expect, it } from 'vitest';
import { createSeededRandom } from '../bench/seeded-random.js';
import { jaccard, wordSet } from './similarity.js';

describe('wordSet', () => {
  it('reads a curly apostrophe as the straight one', () => {
    expect([...wordSet('Oz don’t like the café’s coffee')]).toEqual([...wordSet("Oz don't like the café's coffee")]);
    expect(jaccard(wordSet('I can’t stand cilantro'), wordSet("I can't stand cilantro"))).toBe(1);
  });

  it('lower-cases, drops stop words and possessives, and keeps letters and digits of any script', () => {
    expect([...wordSet("Oz's sister lives in Oslo, Norway (since 2019)!")]).toEqual([
      'oz',
      'sister',
      'lives',
      'oslo',
      'norway',
      'since',
      '2019',
    ]);
    expect([...wordSet('Zoë mag Käse und 日本')]).toEqual(['zoë', 'mag', 'käse', 'und', '日本']);
  });

  it('finds the same words in an ASCII text as the pattern for any script does', () => {
    const random = createSeededRandom(11);
    const alphabet = "abcXYZ019 '''.,-_!?'s\t\nIsThe";
    for (let text = 0; text < 2000; text++) {
      let ascii = '';
      for (let index = random.below(40); index > 0; index--) ascii += alphabet[random.below(alphabet.length)];
      // A non-ASCII word of its own takes the pattern for any script; it is then left out.
      const anyScript = wordSet(`${ascii} \u00e9t\u00e9`);
      anyScript.delete('\u00e9t\u00e9');
      expect([...wordSet(ascii)]).toEqual([...anyScript]);
    }
    expect([...wordSet("Oz's cat isn't Mia's, it's O'Neil's")]).toEqual(['oz', 'cat', "isn't", 'mia', "o'neil"]);
  });

  it('keeps stop words when asked and leaves out the words it is told to ignore', () => {
    expect([...wordSet('Oz is a nurse', { keepStopWords: true })]).toEqual(['oz', 'is', 'a', 'nurse']);
    expect([...wordSet('Oz is a nurse', { ignore: ['OZ'] })]).toEqual(['nurse']);
  });
});

describe('jaccard', () => {
  it('is shared words over all words', () => {
    expect(jaccard('Oz prefers dark mode', 'Oz prefers light mode')).toBeCloseTo(3 / 5);
    expect(jaccard('the same words', 'same words the')).toBe(1);
    expect(jaccard('tea', 'coffee')).toBe(0);
  });

  it('does not count stop words, so two different facts about one person stay apart', () => {
    expect(jaccard('Oz is a nurse', 'Oz is a runner')).toBeLessThan(0.35);
  });

  it('takes word sets as well as strings, and scores empty input 0', () => {
    expect(jaccard(new Set(['a1', 'b2']), 'b2 c3')).toBeCloseTo(1 / 3);
    expect(jaccard('', '')).toBe(0);
    expect(jaccard('the of and', 'words')).toBe(0);
  });
});
