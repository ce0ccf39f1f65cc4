import { describe, expect, it } from 'vitest';
import { chunkWords } from './chunking.js';

const words = (count: number) => Array.from({ length: count }, (_, index) => `w${index}`).join(' ');

describe('chunkWords', () => {
  it('cuts 300-word chunks that repeat the last 50 words of the chunk before', () => {
    const chunks = chunkWords(words(700), { size: 300, overlap: 50 });
    expect(chunks.map((chunk) => chunk.split(' ').length)).toEqual([300, 300, 200]);
    expect(chunks.map((chunk) => chunk.split(' ')[0])).toEqual(['w0', 'w250', 'w500']);
    expect(chunks[0]?.split(' ').slice(250)).toEqual(chunks[1]?.split(' ').slice(0, 50));
    expect(chunks.at(-1)?.endsWith('w699')).toBe(true);
  });

  it('keeps a text of at most one chunk whole, and gives nothing for an empty one', () => {
    expect(chunkWords('Oz: hello\nassistant:  hi there', { size: 300, overlap: 50 })).toEqual([
      'Oz: hello\nassistant:  hi there',
    ]);
    expect(chunkWords(words(300), { size: 300, overlap: 50 })).toHaveLength(1);
    expect(chunkWords('  \n ', { size: 300, overlap: 50 })).toEqual([]);
  });

  it('does not add a chunk that would only repeat the overlap', () => {
    expect(chunkWords(words(550), { size: 300, overlap: 50 }).map((chunk) => chunk.split(' ')[0])).toEqual([
      'w0',
      'w250',
    ]);
  });

  it('keeps line breaks inside a chunk', () => {
    const [first] = chunkWords('one two\nthree four five', { size: 4, overlap: 1 });
    expect(first).toBe('one two\nthree four');
  });

  it('refuses an overlap that is not smaller than the chunk', () => {
    expect(() => chunkWords('a b c', { size: 2, overlap: 2 })).toThrow(RangeError);
    expect(() => chunkWords('a b c', { size: 0, overlap: 0 })).toThrow(RangeError);
  });
});
