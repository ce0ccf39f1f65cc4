/**
 * An exact, in-memory answer to "does this memory have a near-duplicate": whether any other memory of
 * the same owner shares words with it at a Jaccard overlap of at least `threshold`, over the word sets
 * `wordSet` gives (the ones `jaccard` compares). Consolidation runs its full-text candidate search only
 * for memories that have one: a memory without one cannot be merged by the Jaccard pass, whatever
 * that search would have returned.
 *
 * `seal` answers it for every memory added, at once, by prefix filtering (PPJoin): the words are put in
 * one order, rarest in the indexed memories first, and the memories are visited from the fewest words
 * to the most. Sets X and Y (|Y| <= |X|) with Jaccard >= t share o >= t·(|X| + |Y|) / (1 + t) words,
 * so o >= t·|X| and o >= 2t·|Y| / (1 + t); their first shared word (in that order) lies in X's first
 * |X| - ⌈t·|X|⌉ + 1 words and in Y's first |Y| - ⌈2t·|Y| / (1 + t)⌉ + 1 (fewer than o words come after
 * it in each), where they meet: X looks up its first words in the lists of the memories visited
 * before it, then adds its own. A pair met first at positions i and j shares at most
 * min(|X| - i, |Y| - j) words (none before them); the rest are compared word by word.
 */
export interface NearDuplicateIndex {
  /** Adds a memory before `seal` (its words and owner as they are now); ids must grow. */
  add(id: number, owner: string, words: ReadonlySet<string>): void;
  /** Finds every memory's near-duplicates; `add` after it is refused. */
  seal(): void;
  /**
   * False only when memory `id`, indexed with these words and this owner, has no near-duplicate among
   * the indexed memories; true when it has one, or when it was not indexed so (unknown: search).
   */
  hasNearDuplicate(id: number, owner: string, words: ReadonlySet<string>): boolean;
  /** Memories indexed. */
  readonly size: number;
}

/** The fewest words two sets of which one has `size` words must share to reach `threshold` (rounded down, never above). */
export function minimumShared(size: number, threshold: number): number {
  return atLeast(threshold * size);
}

/**
 * The smallest whole number of words at least `value`, a hair under it before rounding up: a product
 * that floating point puts just above an integer must not ask for one word more than an overlap needs.
 */
function atLeast(value: number): number {
  return Math.max(1, Math.ceil(value - 1e-9));
}

export function createNearDuplicateIndex(threshold: number): NearDuplicateIndex {
  const wordIds = new Map<string, number>();
  /** Memories each word is in, by word id. */
  const frequencies: number[] = [];
  const owners = new Map<string, number>();
  /** Per indexed memory: its id, owner number and word ids (the rarest first once sealed). */
  const ids: number[] = [];
  const ownerOf: number[] = [];
  const wordsOf: Int32Array[] = [];
  /** Per indexed memory once sealed: 1 when it has a near-duplicate. */
  let found = new Uint8Array(0);
  let sealed = false;

  return {
    get size() {
      return ids.length;
    },

    add(id, owner, words) {
      if (sealed) throw new Error('the near-duplicate index is sealed');
      if (ids.length > 0 && id <= (ids.at(-1) ?? 0))
        throw new Error('add memories to the near-duplicate index by growing id');
      let ownerNumber = owners.get(owner);
      if (ownerNumber === undefined) {
        ownerNumber = owners.size;
        owners.set(owner, ownerNumber);
      }
      ids.push(id);
      ownerOf.push(ownerNumber);
      wordsOf.push(
        Int32Array.from(words, (word) => {
          let wordId = wordIds.get(word);
          if (wordId === undefined) {
            wordId = frequencies.length;
            wordIds.set(word, wordId);
            frequencies.push(0);
          }
          frequencies[wordId] = (frequencies[wordId] ?? 0) + 1;
          return wordId;
        }),
      );
    },

    seal() {
      if (sealed) return;
      sealed = true;
      const rank = new Int32Array(frequencies.length);
      Array.from({ length: frequencies.length }, (_, index) => index)
        .sort((left, right) => (frequencies[left] ?? 0) - (frequencies[right] ?? 0) || left - right)
        .forEach((word, position) => {
          rank[word] = position;
        });
      for (const words of wordsOf) words.sort((left, right) => (rank[left] ?? 0) - (rank[right] ?? 0));
      found = new Uint8Array(ids.length);
      const ownerCount = Math.max(1, owners.size);
      /** Memories by prefix word and owner (key: word id * owners + owner), as pairs: memory, position. */
      const postings = new Map<number, number[]>();
      const seen = new Int32Array(ids.length).fill(-1);
      const marked = new Int32Array(frequencies.length).fill(-1);
      const visitOrder = Array.from({ length: ids.length }, (_, index) => index).sort(
        (left, right) => (wordsOf[left]?.length ?? 0) - (wordsOf[right]?.length ?? 0) || left - right,
      );
      for (const probe of visitOrder) {
        const words = wordsOf[probe] ?? new Int32Array(0);
        const size = words.length;
        if (size === 0) continue;
        const owner = ownerOf[probe] ?? 0;
        for (const word of words) marked[word] = probe;
        for (let position = 0; position <= size - minimumShared(size, threshold); position++) {
          const list = postings.get((words[position] ?? 0) * ownerCount + owner) ?? [];
          for (let entry = 0; entry < list.length; entry += 2) {
            const other = list[entry] ?? 0;
            if (seen[other] === probe) continue;
            seen[other] = probe;
            const otherWords = wordsOf[other] ?? new Int32Array(0);
            const needed = atLeast((threshold * (size + otherWords.length)) / (1 + threshold));
            if (Math.min(size - position, otherWords.length - (list[entry + 1] ?? 0)) < needed) continue;
            let shared = 0;
            for (const word of otherWords) if (marked[word] === probe) shared++;
            // As `jaccard` computes it.
            if (shared / (size + otherWords.length - shared) >= threshold) {
              found[probe] = 1;
              found[other] = 1;
            }
          }
        }
        const indexed = size - atLeast((2 * threshold * size) / (1 + threshold)) + 1;
        for (let position = 0; position < indexed && position < size; position++) {
          const key = (words[position] ?? 0) * ownerCount + owner;
          const list = postings.get(key);
          if (list) list.push(probe, position);
          else postings.set(key, [probe, position]);
        }
      }
    },

    hasNearDuplicate(id, owner, words) {
      if (!sealed) throw new Error('seal the near-duplicate index first');
      let low = 0;
      let high = ids.length - 1;
      while (low < high) {
        const middle = (low + high) >> 1;
        if ((ids[middle] ?? 0) < id) low = middle + 1;
        else high = middle;
      }
      if (ids[low] !== id || owners.get(owner) !== ownerOf[low]) return true;
      const indexed = wordsOf[low] ?? new Int32Array(0);
      if (indexed.length !== words.size) return true;
      const wordsNow = new Set(indexed);
      for (const word of words) if (!wordsNow.has(wordIds.get(word) ?? -1)) return true;
      return found[low] === 1;
    },
  };
}
