import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { indexStem } from '../../core/recall/calibrated-relevance.js';

describe("core's stemmer beside the full-text index", () => {
  it('stems every word of the README and the docs as the porter tokenizer of the memories index does', () => {
    const text = ['README.md', 'docs/architecture.md', 'docs/evaluation.md', 'docs/reliability.md']
      .map((path) => readFileSync(path, 'utf8'))
      .join(' ')
      .toLowerCase();
    // Besides the docs' words, letters the index folds and letters it keeps as they are (Greek, Cyrillic, Latin with two marks).
    const letters = [
      'ελένη',
      'άλλα',
      'ϊ',
      'андрей',
      'йогурт',
      'ёлка',
      'zoë',
      'ǽsir',
      'ǡ',
      'ệ',
      'naïve',
      'ångström',
      'e\u0301te',
    ];
    const words = [...new Set([...(text.match(/[\p{L}\p{N}]+/gu) ?? []), ...letters])].filter(
      (word) => word.length < 40,
    );
    expect(words.length).toBeGreaterThan(1000);

    const database = new Database(':memory:');
    database.exec(`
      CREATE VIRTUAL TABLE words USING fts5(word, tokenize = 'porter unicode61 remove_diacritics 2');
      CREATE VIRTUAL TABLE stems USING fts5vocab(words, 'row');
    `);
    const insert = database.prepare('INSERT INTO words(word) VALUES (?)');
    const clear = database.prepare('DELETE FROM words');
    const stems = database.prepare<[], { term: string }>('SELECT term FROM stems');
    const differing = words.flatMap((word) => {
      clear.run();
      insert.run(word);
      const indexed = stems.all().map((row) => row.term);
      return indexed.length === 1 && indexed[0] === indexStem(word) ? [] : [`${word}: ${indexed} / ${indexStem(word)}`];
    });
    database.close();
    expect(differing).toEqual([]);
  });
});
