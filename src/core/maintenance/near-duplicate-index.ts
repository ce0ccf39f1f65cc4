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
 *
 * `seal(answerAbove)` answers only for the memories with a greater id (a run's new ones): only those are
 * listed, under their first |Y| - ⌈t·|Y|⌉ + 1 words (the bound for a partner of any size, as X's above),
 * and every memory looks its own first words up in those lists: a pair of two older memories is never
 * compared, and an older memory's answer is "unknown".
 */
export interface NearDuplicateIndex {
  /** Adds a memory before `seal` (its words and owner as they are now); ids must grow. */
  add(id: number, owner: string, words: Iterable<string>): void;
  /**
   * Adds a memory by its words' ids in the index's vocabulary (`NearDuplicateIndexOptions.words`), each
   * once, as `add` would have given them (consolidation's stored word ids); ids must grow.
   */
  addIds(id: number, owner: string, wordIds: ArrayLike<number>): void;
  /**
   * Finds the near-duplicates of every memory added, or with `answerAbove` only of those with a greater
   * id (the new memories of a run: a pair of two older ones is not compared); `add` after it is refused.
   */
  seal(answerAbove?: number): void;
  /**
   * False only when memory `id`, indexed with these words and this owner, has no near-duplicate among
   * the indexed memories; true when it has one, or when it was not indexed so, or was not answered for
   * (`seal`'s `answerAbove`): unknown, search.
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

/**
 * A growable array of 32-bit integers (one allocation for every memory's words, not one each), grown by half
 * (ADR 19, 2026-12-03, session 13: at most a third of it unused, where doubling left up to half).
 */
function createIntList() {
  let values = new Int32Array(1024);
  let length = 0;
  return {
    push(value: number) {
      if (length === values.length) {
        const grown = new Int32Array(Math.ceil(values.length * 1.5));
        grown.set(values);
        values = grown;
      }
      values[length++] = value;
    },
    get length() {
      return length;
    },
    /** The values, trimmed. */
    done(): Int32Array {
      return values.subarray(0, length);
    },
  };
}

/** Where the words of an index come from. */
export interface NearDuplicateIndexOptions {
  /**
   * Words and their ids, shared with the caller: words `add` meets that are not in it are added, with
   * ids from `nextWordId` up. Ids are small whole numbers (arrays are sized by the largest).
   */
  words?: Map<string, number>;
  /** The id of the first word `add` adds to `words` (default: its size): above every id `addIds` is given. */
  nextWordId?: number;
}

export function createNearDuplicateIndex(
  threshold: number,
  options: NearDuplicateIndexOptions = {},
): NearDuplicateIndex {
  const wordIds = options.words ?? new Map<string, number>();
  let nextWordId = options.nextWordId ?? wordIds.size;
  /** Memories each word is in, by word id (`wordLimit`: one above the largest id seen). */
  let frequencies = new Int32Array(1024);
  let wordLimit = 0;
  const count = (wordId: number) => {
    if (wordId >= frequencies.length) {
      const grown = new Int32Array(Math.max(wordId + 1, frequencies.length * 2));
      grown.set(frequencies);
      frequencies = grown;
    }
    frequencies[wordId] = (frequencies[wordId] ?? 0) + 1;
    if (wordId >= wordLimit) wordLimit = wordId + 1;
  };
  const owners = new Map<string, number>();
  /** Per indexed memory: its id, owner number, and where its word ids start in `words` (the rarest first once sealed). */
  const ids = createIntList();
  const ownerOf = createIntList();
  const starts = createIntList();
  const words = createIntList();
  let allWords: Int32Array = new Int32Array(0);
  let startOf: Int32Array = new Int32Array(0);
  /** Per indexed memory once sealed: 1 when it has a near-duplicate. */
  let found = new Uint8Array(0);
  let idOf: Int32Array = new Int32Array(0);
  let owned: Int32Array = new Int32Array(0);
  let answeredAbove = Number.NEGATIVE_INFINITY;
  let sealed = false;
  let last = Number.NEGATIVE_INFINITY;
  const begin = (id: number, owner: string) => {
    if (sealed) throw new Error('the near-duplicate index is sealed');
    if (id <= last) throw new Error('add memories to the near-duplicate index by growing id');
    last = id;
    let ownerNumber = owners.get(owner);
    if (ownerNumber === undefined) {
      ownerNumber = owners.size;
      owners.set(owner, ownerNumber);
    }
    ids.push(id);
    ownerOf.push(ownerNumber);
    starts.push(words.length);
  };

  return {
    get size() {
      return ids.length;
    },

    add(id, owner, text) {
      begin(id, owner);
      for (const word of text) {
        let wordId = wordIds.get(word);
        if (wordId === undefined) {
          wordId = nextWordId++;
          wordIds.set(word, wordId);
        }
        count(wordId);
        words.push(wordId);
      }
    },

    addIds(id, owner, memoryWords) {
      begin(id, owner);
      for (let at = 0; at < memoryWords.length; at++) {
        const wordId = memoryWords[at] ?? 0;
        count(wordId);
        words.push(wordId);
      }
    },

    seal(answerAbove = Number.NEGATIVE_INFINITY) {
      if (sealed) return;
      sealed = true;
      answeredAbove = answerAbove;
      const count = ids.length;
      starts.push(words.length);
      allWords = words.done();
      startOf = starts.done();
      idOf = ids.done();
      owned = ownerOf.done();
      const sizeOf = (index: number) => (startOf[index + 1] ?? 0) - (startOf[index] ?? 0);
      const rank = new Int32Array(wordLimit);
      Array.from({ length: wordLimit }, (_, index) => index)
        .sort((left, right) => (frequencies[left] ?? 0) - (frequencies[right] ?? 0) || left - right)
        .forEach((word, position) => {
          rank[word] = position;
        });
      const isAnswered = (index: number) => (idOf[index] ?? 0) > answerAbove;
      const answeringAll = count === 0 || (idOf[0] ?? 0) > answerAbove;
      for (let index = 0; index < count; index++) {
        // Only the memories answered for are probed by their first words, or listed under them: the others
        // look every word of theirs up (below), in any order.
        if (!answeringAll && !isAnswered(index)) continue;
        allWords
          .subarray(startOf[index], startOf[index + 1])
          .sort((left, right) => (rank[left] ?? 0) - (rank[right] ?? 0));
      }
      found = new Uint8Array(count);
      const ownerCount = Math.max(1, owners.size);
      const keyOf = (index: number, position: number) =>
        (allWords[(startOf[index] ?? 0) + position] ?? 0) * ownerCount + (owned[index] ?? 0);
      const indexedOf = (size: number) => Math.min(size, size - atLeast((2 * threshold * size) / (1 + threshold)) + 1);
      // Answering all: every memory in visiting order. Answering some: only they need an order (each pair
      // of two of them is compared once); the others probe in id order.
      const visitOrder = (
        answeringAll
          ? Int32Array.from({ length: count }, (_, index) => index)
          : Int32Array.from({ length: count }, (_, index) => index).filter(isAnswered)
      ).sort((left, right) => sizeOf(left) - sizeOf(right) || left - right);
      const visitedAt = new Int32Array(count);
      visitOrder.forEach((index, position) => {
        visitedAt[index] = position;
      });
      const answeredOrder = visitOrder;
      /** A memory's words the probes look up: those its first shared word with any near-duplicate is among. */
      const probedOf = (size: number) => size - minimumShared(size, threshold) + 1;
      // Every memory answered: each is listed under its first words by the bound for a larger partner
      // (`indexedOf`), as it is visited only by larger ones. Some answered: only they are listed, by the
      // bound for any partner (`probedOf`), and every memory looks them up (a pair of two unanswered
      // memories is of no interest).
      const listedOf = answeringAll ? indexedOf : probedOf;
      // The lists by prefix word and owner, in visiting order: (memory, position) pairs, one allocation
      // (a list's slot is its key's rank among the keys listed, its entries between two offsets). The keys are
      // found by a binary search of one sorted array, not a Map (ADR 19, 2026-12-02, session 9): a Map of the
      // half million keys of a first cycle over 100,000 memories held about 20 MB of the JavaScript heap.
      let listedCount = 0;
      for (const index of answeredOrder) listedCount += listedOf(sizeOf(index));
      // 32-bit keys where every key fits (ADR 19, 2026-12-03, session 13: half the bytes); the distinct keys are
      // then kept at the front of the same array, and each list's next free entry in its own offset while the
      // entries are filled (no second array of keys, no copy of the offsets).
      const listedKeys =
        wordLimit * ownerCount <= 2 ** 32 ? new Uint32Array(listedCount) : new Float64Array(listedCount);
      let listedAt = 0;
      for (const index of answeredOrder) {
        for (let position = 0; position < listedOf(sizeOf(index)); position++) {
          listedKeys[listedAt++] = keyOf(index, position);
        }
      }
      listedKeys.sort();
      let distinct = 0;
      for (let at = 0; at < listedCount; at++) if (at === 0 || listedKeys[at] !== listedKeys[at - 1]) distinct++;
      const offsets = new Int32Array(distinct + 1);
      let last = -1;
      for (let at = 0; at < listedCount; at++) {
        const key = listedKeys[at] ?? 0;
        // Sorted: the key before this one is the last distinct key kept (at or before `at`, already read).
        if (last < 0 || key !== listedKeys[last]) listedKeys[++last] = key;
        offsets[last + 1] = at + 1;
      }
      const keys = listedKeys.subarray(0, distinct);
      /** The slot of a key listed, or -1. */
      const slotOf = (key: number): number => {
        let low = 0;
        let high = distinct - 1;
        while (low <= high) {
          const middle = (low + high) >>> 1;
          const value = keys[middle] ?? 0;
          if (value < key) low = middle + 1;
          else if (value > key) high = middle - 1;
          else return middle;
        }
        return -1;
      };
      const entries = new Int32Array(2 * listedCount);
      for (const index of answeredOrder) {
        for (let position = 0; position < listedOf(sizeOf(index)); position++) {
          const slot = slotOf(keyOf(index, position));
          const at = offsets[slot] ?? 0;
          offsets[slot] = at + 1;
          entries[2 * at] = index;
          entries[2 * at + 1] = position;
        }
      }
      // Each slot's offset is now where the next one's entries start: back one place.
      for (let slot = distinct; slot > 0; slot--) offsets[slot] = offsets[slot - 1] ?? 0;
      offsets[0] = 0;
      const seen = new Int32Array(count).fill(-1);
      const marked = new Int32Array(wordLimit).fill(-1);
      if (!answeringAll && entries.length > 0) {
        // The memories not answered for (a run's older ones), each against the answered ones' lists by
        // every word of its own, unsorted (sorting them all cost most of a steady run's seal). A pair
        // is met at each shared word listed for the answered memory; only at the first of them in its
        // order does its position bound the overlap, and that is the meeting with the largest bound: a
        // pair is verified at the first meeting that its position does not rule out, and marked seen then.
        const listedOwners = new Uint8Array(ownerCount);
        for (const index of answeredOrder) listedOwners[owned[index] ?? 0] = 1;
        for (let probe = 0; probe < count; probe++) {
          if (isAnswered(probe) || listedOwners[owned[probe] ?? 0] === 0) continue;
          const size = sizeOf(probe);
          const start = startOf[probe] ?? 0;
          for (let position = 0; position < size; position++) marked[allWords[start + position] ?? 0] = probe;
          for (let position = 0; position < size; position++) {
            const slot = slotOf(keyOf(probe, position));
            if (slot < 0) continue;
            for (let entry = offsets[slot] ?? 0; entry < (offsets[slot + 1] ?? 0); entry++) {
              const other = entries[2 * entry] ?? 0;
              if (seen[other] === probe) continue;
              const otherSize = sizeOf(other);
              const needed = atLeast((threshold * (size + otherSize)) / (1 + threshold));
              if (otherSize - (entries[2 * entry + 1] ?? 0) < needed) continue;
              seen[other] = probe;
              let shared = 0;
              const otherStart = startOf[other] ?? 0;
              for (let at = otherStart; at < otherStart + otherSize; at++)
                if (marked[allWords[at] ?? 0] === probe) shared++;
              if (shared / (size + otherSize - shared) >= threshold) {
                found[probe] = 1;
                found[other] = 1;
              }
            }
          }
        }
      }
      for (const probe of visitOrder) {
        const size = sizeOf(probe);
        if (size === 0 || entries.length === 0) continue;
        const start = startOf[probe] ?? 0;
        for (let position = 0; position < size; position++) marked[allWords[start + position] ?? 0] = probe;
        const visited = visitedAt[probe] ?? 0;
        // An answered memory meets the answered ones visited before it (each pair once); another meets all.
        const upTo = answeringAll || isAnswered(probe) ? visited : count;
        for (let position = 0; position < probedOf(size); position++) {
          const slot = slotOf(keyOf(probe, position));
          if (slot < 0) continue;
          for (let entry = offsets[slot] ?? 0; entry < (offsets[slot + 1] ?? 0); entry++) {
            const other = entries[2 * entry] ?? 0;
            if ((visitedAt[other] ?? 0) >= upTo) break;
            if (seen[other] === probe) continue;
            seen[other] = probe;
            const otherSize = sizeOf(other);
            const needed = atLeast((threshold * (size + otherSize)) / (1 + threshold));
            if (Math.min(size - position, otherSize - (entries[2 * entry + 1] ?? 0)) < needed) continue;
            let shared = 0;
            const otherStart = startOf[other] ?? 0;
            for (let at = otherStart; at < otherStart + otherSize; at++)
              if (marked[allWords[at] ?? 0] === probe) shared++;
            // As `jaccard` computes it.
            if (shared / (size + otherSize - shared) >= threshold) {
              found[probe] = 1;
              found[other] = 1;
            }
          }
        }
      }
    },

    hasNearDuplicate(id, owner, text) {
      if (!sealed) throw new Error('seal the near-duplicate index first');
      let low = 0;
      let high = idOf.length - 1;
      while (low < high) {
        const middle = (low + high) >> 1;
        if ((idOf[middle] ?? 0) < id) low = middle + 1;
        else high = middle;
      }
      if (idOf.length === 0 || idOf[low] !== id || id <= answeredAbove || owners.get(owner) !== owned[low]) return true;
      const indexed = new Set(allWords.subarray(startOf[low], startOf[low + 1]));
      if (indexed.size !== text.size) return true;
      for (const word of text) if (!indexed.has(wordIds.get(word) ?? -1)) return true;
      return found[low] === 1;
    },
  };
}
