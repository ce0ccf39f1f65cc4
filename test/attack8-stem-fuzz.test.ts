import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { porterStem } from '../src/core/recall/porter-stem.js';

const suffixes = [
  '',
  's',
  'es',
  'ies',
  'sses',
  'ss',
  'ed',
  'eed',
  'ing',
  'ational',
  'tional',
  'enci',
  'anci',
  'izer',
  'bli',
  'abli',
  'alli',
  'entli',
  'eli',
  'ousli',
  'ization',
  'ation',
  'ator',
  'alism',
  'iveness',
  'fulness',
  'ousness',
  'aliti',
  'iviti',
  'biliti',
  'logi',
  'icate',
  'ative',
  'alize',
  'iciti',
  'ical',
  'ful',
  'ness',
  'al',
  'ance',
  'ence',
  'er',
  'ic',
  'able',
  'ible',
  'ant',
  'ement',
  'ment',
  'ent',
  'ion',
  'sion',
  'tion',
  'ou',
  'ism',
  'ate',
  'iti',
  'ous',
  'ive',
  'ize',
  'e',
  'l',
  'll',
  'y',
  'ly',
  'at',
  'bl',
  'iz',
  'yed',
  'ying',
  'ies',
  'eing',
];
const pieces = [
  'b',
  'c',
  'd',
  'f',
  'g',
  'h',
  'k',
  'l',
  'm',
  'n',
  'p',
  'r',
  's',
  't',
  'v',
  'w',
  'x',
  'z',
  'y',
  'a',
  'e',
  'i',
  'o',
  'u',
  'y',
  'ee',
  'ea',
  'oa',
  'ss',
  'tt',
  'll',
  'zz',
  '0',
  '7',
  'ey',
  'ay',
  'oy',
];

describe('attack8: porterStem against the index porter tokenizer, words built from suffixes', () => {
  it('(held) gives the same stem as FTS5 for 150,000 random ASCII words', () => {
    let state = 12345;
    const random = (n: number) => {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return Math.floor(((state >>> 0) / 4294967296) * n);
    };
    const words = new Set<string>();
    for (const a of pieces) for (const s of suffixes) words.add(a + s);
    for (const a of pieces) for (const b of pieces) for (const s of suffixes) words.add(a + b + s);
    while (words.size < 150_000) {
      let word = '';
      for (let i = 0, n = random(5); i <= n; i++) word += pieces[random(pieces.length)];
      word += suffixes[random(suffixes.length)];
      if (random(3) === 0) word += suffixes[random(suffixes.length)];
      words.add(word.slice(0, 70));
    }
    const database = new Database(':memory:');
    database.exec(`CREATE VIRTUAL TABLE w USING fts5(c, tokenize = 'porter unicode61 remove_diacritics 2');
      CREATE VIRTUAL TABLE v USING fts5vocab(w, 'instance');`);
    const list = [...words].filter((word) => !/yy/.test(word) && word.length <= 64);
    const insert = database.prepare('INSERT INTO w (rowid, c) VALUES (?, ?)');
    database.transaction(() => {
      for (const [index, word] of list.entries()) insert.run(index + 1, word);
    })();
    const stems = new Map(database.prepare<[], [number, string]>('SELECT doc, term FROM v').raw().all());
    const differ = list.flatMap((word, index) =>
      stems.get(index + 1) === porterStem(word)
        ? []
        : [`${word}: index ${stems.get(index + 1)}, ours ${porterStem(word)}`],
    );
    database.close();
    expect(differ.slice(0, 20)).toEqual([]);
  });
});
