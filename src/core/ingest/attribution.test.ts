import { describe, expect, it } from 'vitest';
import { attributeToSpeaker, thirdPersonSingular } from './attribution.js';

describe('attributeToSpeaker', () => {
  it.each([
    ['I prefer dark mode', 'Oz prefers dark mode'],
    ["I'm a nurse", 'Oz is a nurse'],
    ['my sister lives in Oslo', "Oz's sister lives in Oslo"],
    ['I really like hiking with my dog', "Oz really likes hiking with Oz's dog"],
    ["I don't eat meat", "Oz doesn't eat meat"],
    ['I went to Paris last year', 'Oz went to Paris last year'],
    ["I'd love to see it", 'Oz would love to see it'],
    ["I'd been there before", 'Oz had been there before'],
    ['I have two kids', 'Oz has two kids'],
    ['I study biology', 'Oz studies biology'],
    ['I watch movies', 'Oz watches movies'],
    ['I am not sure', 'Oz is not sure'],
    ['I can swim', 'Oz can swim'],
    ['She told me I should go', 'She told Oz Oz should go'],
    ['I play guitar and my wife sings', "Oz plays guitar and Oz's wife sings"],
    ["I haven't tried it", "Oz hasn't tried it"],
    ['I usually go running at 6', 'Oz usually goes running at 6'],
    ['I fly to Berlin tomorrow', 'Oz flies to Berlin tomorrow'],
    ["I'm going to Rome", 'Oz is going to Rome'],
    ['I was born in 1990', 'Oz was born in 1990'],
    ["I've been painting for years", 'Oz has been painting for years'],
    ['i love it', 'Oz loves it'],
    ['I’m allergic to peanuts', 'Oz is allergic to peanuts'],
    ['That book is mine', "That book is Oz's"],
    ['I taught myself to code', 'Oz taught themselves to code'],
    ['I no longer eat meat', 'Oz no longer eats meat'],
  ])('rewrites "%s" as "%s"', (text, expected) => {
    expect(attributeToSpeaker(text, 'Oz')).toBe(expected);
  });

  it('turns "we" into the speaker and others, or the speaker and the companion they named', () => {
    expect(attributeToSpeaker('We went to the beach', 'Oz')).toBe('Oz and others went to the beach');
    expect(attributeToSpeaker("we're moving in May", 'Oz', { companion: 'family' })).toBe(
      "Oz and Oz's family are moving in May",
    );
    expect(attributeToSpeaker('Our team uses Postgres', 'Oz')).toBe("Oz's team uses Postgres");
  });

  it('leaves text without a first person as it is', () => {
    expect(attributeToSpeaker('The staging server runs on port 8080', 'Oz')).toBe(
      'The staging server runs on port 8080',
    );
  });
});

describe('thirdPersonSingular', () => {
  it.each([
    ['prefer', 'prefers'],
    ['study', 'studies'],
    ['play', 'plays'],
    ['watch', 'watches'],
    ['go', 'goes'],
    ['have', 'has'],
    ['miss', 'misses'],
  ])('conjugates %s as %s', (verb, expected) => {
    expect(thirdPersonSingular(verb)).toBe(expected);
  });
});
