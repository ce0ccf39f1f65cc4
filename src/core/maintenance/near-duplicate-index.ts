/**
 * An exact, in-memory test of "does this memory have a near-duplicate": whether any other memory of
 * the same owner shares words with it at a Jaccard overlap of at least `threshold`, over the word sets
 * `wordSet` gives (the ones `jaccard` compares). Consolidation runs its full-text candidate search only
 * for memories that have one: a memory without one cannot be merged by the Jaccard pass, whatever
 * that search would have returned.
 *
 * Prefix filtering: the words are put in one order, rarest in the indexed memories first. Two word
 * sets A and B with Jaccard >= t share at least s >= t·|A| words (|A ∪ B| >= |A|), and as many for B;
 * the first shared word in that order lies in A's first |A| - s(A) + 1 words and in B's first
 * |B| - s(B) + 1 (each has fewer than s words after it), so A and B meet in their prefixes. Each
 * memory is indexed under its prefix words only (rare ones: short lists), a probe reads the lists of
 * its own prefix words, and every memory found is compared exactly.
 */
export interface NearDuplicateIndex {
  /** Adds a memory before `seal` (its words and owner as they are now). */
  add(id: number, owner: string, words: ReadonlySet<string>): void;
  /** Fixes the word order and indexes the prefixes; `add` after it is refused. */
  seal(): void;
  /** True when a memory of `owner` other than `id` overlaps `words` at Jaccard >= the threshold. */
  hasNearDuplicate(id: number, owner: string, words: ReadonlySet<string>): boolean;
  /** Memories indexed (before `seal`). */
  readonly size: number;
}

/** The fewest words two sets of which one has `size` words must share to reach `threshold` (rounded down, never above). */
export function minimumShared(size: number, threshold: number): number {
  // A hair under t·|A| before rounding up: a product that floating point puts just above an integer
  // must not ask for one word more than the overlap needs.
  return Math.max(1, Math.ceil(threshold * size - 1e-9));
}

export function createNearDuplicateIndex(threshold: number): NearDuplicateIndex {
  const wordIds = new Map<string, number>();
  /** Memories each word is in, by word id (words first seen after `seal` count 0). */
  const frequencies: number[] = [];
  const owners = new Map<string, number>();
  /** Per indexed memory: its id, owner number and word ids (the rarest first once sealed). */
  const ids: number[] = [];
  const ownerOf: number[] = [];
  const wordsOf: Int32Array[] = [];
  /**
   * Memories by owner number and prefix word id (key: word id * owners + owner), as pairs: the memory's
   * number, then the word's position in its words.
   */
  const postings = new Map<number, number[]>();
  let sealedWords = -1;
  let rank = new Int32Array(0);
  /** Per probe (numbered): the memories already looked at, and the probe's words. */
  let probes = 0;
  let seen = new Int32Array(0);
  let marked = new Int32Array(0);

  function wordId(word: string, counting: boolean): number {
    let id = wordIds.get(word);
    if (id === undefined) {
      id = frequencies.length;
      wordIds.set(word, id);
      frequencies.push(0);
    }
    if (counting) frequencies[id] = (frequencies[id] ?? 0) + 1;
    return id;
  }

  /** Word ids in the index's order: rarest first (words unknown when sealed first of all), ties by id. */
  function ordered(words: ReadonlySet<string>): Int32Array {
    const result = Int32Array.from(words, (word) => wordId(word, false));
    return result.sort((left, right) => rankOf(left) - rankOf(right));
  }

  function rankOf(word: number): number {
    return word < sealedWords ? (rank[word] ?? 0) : word - sealedWords - 2 ** 30;
  }

  /** |A ∩ B| >= t·|A ∪ B| for the probe (its words marked) and memory `index`, computed as `jaccard` does. */
  function overlaps(probeSize: number, index: number): boolean {
    const words = wordsOf[index] ?? new Int32Array(0);
    let shared = 0;
    for (const word of words) if (marked[word] === probes) shared++;
    return shared / (probeSize + words.length - shared) >= threshold;
  }

  return {
    get size() {
      return ids.length;
    },

    add(id, owner, words) {
      if (sealedWords >= 0) throw new Error('the near-duplicate index is sealed');
      let ownerNumber = owners.get(owner);
      if (ownerNumber === undefined) {
        ownerNumber = owners.size;
        owners.set(owner, ownerNumber);
      }
      ids.push(id);
      ownerOf.push(ownerNumber);
      wordsOf.push(Int32Array.from(words, (word) => wordId(word, true)));
    },

    seal() {
      if (sealedWords >= 0) return;
      sealedWords = frequencies.length;
      const order = Array.from({ length: sealedWords }, (_, index) => index).sort(
        (left, right) => (frequencies[left] ?? 0) - (frequencies[right] ?? 0) || left - right,
      );
      rank = new Int32Array(sealedWords);
      order.forEach((word, position) => {
        rank[word] = position;
      });
      const ownerCount = Math.max(1, owners.size);
      wordsOf.forEach((words, index) => {
        words.sort((left, right) => rankOf(left) - rankOf(right));
        const prefix = words.length - minimumShared(words.length, threshold) + 1;
        for (let position = 0; position < prefix && position < words.length; position++) {
          const key = (words[position] ?? 0) * ownerCount + (ownerOf[index] ?? 0);
          const list = postings.get(key);
          if (list) list.push(index, position);
          else postings.set(key, [index, position]);
        }
      });
      seen = new Int32Array(ids.length);
      marked = new Int32Array(sealedWords);
    },

    hasNearDuplicate(id, owner, words) {
      if (sealedWords < 0) throw new Error('seal the near-duplicate index first');
      const probe = ordered(words);
      if (probe.length === 0) return false;
      const ownerNumber = owners.get(owner);
      if (ownerNumber === undefined) return false;
      const ownerCount = Math.max(1, owners.size);
      probes++;
      for (const word of probe) if (word < sealedWords) marked[word] = probes;
      const size = probe.length;
      const needed = minimumShared(size, threshold);
      for (let position = 0; position <= size - needed; position++) {
        const word = probe[position] ?? 0;
        if (word >= sealedWords) continue;
        const list = postings.get(word * ownerCount + ownerNumber) ?? [];
        for (let entry = 0; entry < list.length; entry += 2) {
          const index = list[entry] ?? 0;
          if (seen[index] === probes || ids[index] === id) continue;
          seen[index] = probes;
          // Met first here, at the first word they share: every other shared word comes after it in both.
          const other = wordsOf[index]?.length ?? 0;
          const most = Math.min(size - position, other - (list[entry + 1] ?? 0));
          if (most < Math.max(needed, minimumShared(other, threshold))) continue;
          if (overlaps(size, index)) return true;
        }
      }
      return false;
    },
  };
}
