import type { MemoryMerger, MergeCandidate } from '../../core/ports/memory-merger.js';
import { MAX_CONTENT_CHARS } from '../../core/schemas.js';
import { wordSet } from '../../core/similarity.js';
import { sentencesOf, withFullStop } from './offline-text.js';

/**
 * The offline memory merger: rule-based, no model. It keeps the most complete statement (the one
 * with the most distinct words; on a tie the longer, then the newer) and adds each sentence of
 * the others that brings a word it does not have yet, so no distinct detail is lost.
 */
export function createOfflineMemoryMerger(): MemoryMerger {
  return {
    id: 'offline',
    async merge({ memories }) {
      const ranked = memories
        .map((memory) => ({ memory, words: wordSet(memory.content) }))
        .sort(
          (left, right) =>
            right.words.size - left.words.size ||
            right.memory.content.length - left.memory.content.length ||
            newerFirst(left.memory, right.memory),
        );
      const [base, ...others] = ranked;
      if (!base) throw new Error('the offline merger needs at least one memory');
      const covered = new Set(base.words);
      let content = base.memory.content.trim();
      for (const { memory } of others.sort((left, right) => newerFirst(right.memory, left.memory))) {
        for (const sentence of sentencesOf(memory.content)) {
          const words = wordSet(sentence);
          if (![...words].some((word) => !covered.has(word))) continue;
          const longer = `${withFullStop(content)} ${withFullStop(sentence)}`;
          if (longer.length > MAX_CONTENT_CHARS) continue;
          content = longer;
          for (const word of words) covered.add(word);
        }
      }
      return { content };
    },
  };
}

function newerFirst(left: MergeCandidate, right: MergeCandidate): number {
  return Date.parse(right.createdAt) - Date.parse(left.createdAt) || right.id - left.id;
}
