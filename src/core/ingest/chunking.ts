/** Options of `chunkWords`. */
export interface ChunkOptions {
  /** Words per chunk (the last chunk may be shorter). */
  size: number;
  /** Words each chunk repeats from the end of the one before; less than `size`. */
  overlap: number;
}

/**
 * Splits text into chunks of `size` words, each starting `size - overlap` words after the one
 * before, so a sentence cut at a boundary appears whole in one of the two chunks. Each chunk is
 * the original text from its first to its last word (line breaks and spacing kept). A text of
 * `size` words or fewer is one chunk; an empty text has none.
 */
export function chunkWords(text: string, options: ChunkOptions): string[] {
  const { size, overlap } = options;
  if (!Number.isInteger(size) || size < 1) throw new RangeError('chunk size must be a whole number of at least 1');
  if (!Number.isInteger(overlap) || overlap < 0 || overlap >= size) {
    throw new RangeError('chunk overlap must be a whole number from 0 to size - 1');
  }
  const words = [...text.matchAll(/\S+/g)].map((match) => ({
    start: match.index,
    end: match.index + match[0].length,
  }));
  const chunks: string[] = [];
  const step = size - overlap;
  for (let first = 0; first < words.length; first += step) {
    const last = Math.min(first + size, words.length) - 1;
    const start = words[first]?.start ?? 0;
    const end = words[last]?.end ?? start;
    chunks.push(text.slice(start, end));
    if (last === words.length - 1) break;
  }
  return chunks;
}
