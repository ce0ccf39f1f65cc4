import { describe, expect, it } from 'vitest';
import { nameKey, unfitName } from './name-key.js';

describe('nameKey', () => {
  it('folds what a reader does not see: case, accents, fullwidth forms, spacing, invisible characters', () => {
    for (const name of ['Bob', 'bob', 'BOB', 'Bób', 'Ｂｏｂ', 'B o b', 'B.o.b', 'B\u200bob', 'Bob\u00ad']) {
      expect(nameKey(name), name).toBe('bob');
    }
    expect(nameKey('Bob\u3164')).toBe('bob'); // a Hangul filler, a letter drawn as nothing
    expect(nameKey('B\uffa0ob')).toBe('bob');
  });

  it('folds letters of other scripts and digits drawn like Latin ones', () => {
    expect(nameKey('Воb')).toBe(nameKey('Bob')); // Cyrillic В and о
    expect(nameKey('Αnn')).toBe(nameKey('Ann')); // Greek Α
    expect(nameKey('B0b')).toBe(nameKey('Bob'));
    expect(nameKey('Wi11iam')).toBe(nameKey('William'));
    expect(nameKey('Kim')).toBe(nameKey('Kirn'));
    expect(nameKey('ʙᴏʙ')).toBe(nameKey('Bob')); // small capitals
    expect(nameKey('𝐁𝐨𝐛')).toBe(nameKey('Bob')); // mathematical bold, by NFKC
    expect(nameKey('Bօb')).toBe(nameKey('Bob')); // Armenian օ
    expect(nameKey('Μax')).toBe(nameKey('Max')); // Greek capital Mu, whose lower case μ is drawn like u
    expect(nameKey('Ηenry')).toBe(nameKey('Henry')); // Greek capital Eta (η is drawn like n)
    expect(nameKey('Νina')).toBe(nameKey('Nina')); // Greek capital Nu (ν is drawn like v)
    expect(nameKey('Υves')).toBe(nameKey('Yves')); // Greek capital Upsilon
    expect(nameKey('Ᏼob')).toBe(nameKey('Bob')); // Cherokee
    expect(nameKey('\u13fcob')).toBe(nameKey('Bob')); // Cherokee small YV
    expect(nameKey('ꓐob')).toBe(nameKey('Bob')); // Lisu
    expect(nameKey('B\u0966b')).toBe(nameKey('Bob')); // a Devanagari zero
    expect(nameKey('Bi\u0661\u0661')).toBe(nameKey('Bill')); // Arabic-Indic ones
  });

  it('keeps different names apart', () => {
    expect(nameKey('Bob')).not.toBe(nameKey('Rob'));
    expect(nameKey('Ann Lee')).not.toBe(nameKey('Ann'));
    expect(nameKey('李雷')).not.toBe(nameKey('韩梅梅'));
    expect(nameKey('Μax')).not.toBe(nameKey('μax')); // the lower case μ is drawn like u, not m
  });

  it('keys a name of symbols alone by itself, and bounds every key', () => {
    expect(nameKey('🙂')).toBe('🙂');
    expect(nameKey('🙂')).not.toBe(nameKey('🙃'));
    expect(nameKey('ﷺ'.repeat(200)).length).toBeLessThanOrEqual(200);
  });
});

describe('unfitName', () => {
  it('refuses what could forge a line of a transcript or hide what a name holds', () => {
    expect(unfitName('Eve\nBob')).toMatch(/line breaks/);
    expect(unfitName('Eve\u2028Bob')).toMatch(/line breaks/);
    expect(unfitName('B\u200bob')).toMatch(/invisible/);
    expect(unfitName('B\u200dob')).toMatch(/invisible/);
    expect(unfitName('Eve\u202ebob')).toMatch(/invisible/);
    expect(unfitName('Bob\u3164')).toMatch(/invisible/); // a Hangul filler, a letter drawn as nothing
    expect(unfitName('Bob: yes. Eve')).toMatch(/colon/);
    expect(unfitName('Bob： yes')).toMatch(/colon/);
    expect(unfitName('Bob∶ yes')).toMatch(/colon/);
  });

  it('accepts the names people go by', () => {
    for (const name of [
      'Oz',
      'Ann Lee',
      "O'Brien",
      'José María',
      'Zoë',
      '李雷',
      'Dr. Smith',
      'Bob (work)',
      '🙂',
      'Ann 🏳️‍🌈',
      'Kim 👩🏽‍💻',
    ]) {
      expect(unfitName(name), name).toBeNull();
    }
  });
});
