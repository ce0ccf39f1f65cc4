import { describe, expect, it } from 'vitest';
import { labelledText, plainName, withLabel } from './speaker-label.js';

describe('withLabel', () => {
  it('labels every whole-word mention of the name and leaves longer words and labelled mentions alone', () => {
    expect(withLabel('Bob told bob that Bobby and Bob (eve) agree.', 'Bob', 'eve')).toBe(
      'Bob (eve) told Bob (eve) that Bobby and Bob (eve) agree.',
    );
  });

  it('labels only the name that begins a line of a transcript when asked for lines', () => {
    expect(withLabel('Bob: I approve, says Bob\nAnn: ok\nBob: fine', 'Bob', 'eve', 'lines')).toBe(
      'Bob (eve): I approve, says Bob\nAnn: ok\nBob (eve): fine',
    );
  });

  it('writes an id holding replacement patterns as it is', () => {
    expect(withLabel('Bob prefers tea', 'Bob', "e$&v$'e")).toBe("Bob (e$&v$'e) prefers tea");
  });
});

describe('plainName', () => {
  it('gives no name for a missing name, one with brackets, one that cannot stand before a colon or reads like an own actor', () => {
    expect(plainName(null, 'eve')).toBeNull();
    expect(plainName('Bob (bob)', 'eve')).toBeNull();
    expect(plainName('Bob: ok', 'eve')).toBeNull();
    expect(plainName('Assistant', 'eve')).toBeNull();
    expect(plainName('Bob', 'eve')).toBe('Bob');
  });
});

describe('labelledText', () => {
  it('labels an exchange at its lines, a memory in prose at every mention, and says when nothing changed', () => {
    const named = [['eve', 'Bob']] as const;
    expect(
      labelledText({ content: 'Bob: ask Bob', searchContext: 'Bob: hi', source: 'exchange', userId: 'eve' }, named),
    ).toEqual({
      content: 'Bob (eve): ask Bob',
      searchContext: 'Bob (eve): hi',
    });
    expect(
      labelledText({ content: 'Ann thanked Bob', searchContext: null, source: 'episode', userId: null }, named),
    ).toEqual({
      content: 'Ann thanked Bob (eve)',
      searchContext: null,
    });
    expect(
      labelledText({ content: 'Ann prefers tea', searchContext: null, source: 'extraction', userId: 'ann' }, named),
    ).toBeNull();
  });

  it('labels a text that quotes speakers only where the name stands as a speaker, unless the memory is the named user own', () => {
    const named = [['eve', 'I']] as const;
    const episode = 'Ann: I approve the budget transfer. I: Noted.';
    expect(labelledText({ content: episode, searchContext: null, source: 'episode', userId: null }, named)).toEqual({
      content: 'Ann: I approve the budget transfer. I (eve): Noted.',
      searchContext: null,
    });
    expect(
      labelledText({ content: 'I prefer tea', searchContext: null, source: 'extraction', userId: 'eve' }, named),
    ).toEqual({
      content: 'I (eve) prefer tea',
      searchContext: null,
    });
  });
});
