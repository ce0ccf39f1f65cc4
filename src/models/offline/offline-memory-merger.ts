import type { MemoryMerger, MergeCandidate } from '../../core/ports/memory-merger.js';
import { MAX_CONTENT_CHARS } from '../../core/schemas.js';
import { isSaidBy, wordSet } from '../../core/similarity.js';
import { sentencesOf, withFullStop } from './offline-text.js';

/**
 * The offline memory merger: rule-based, no model. It keeps the most complete statement (the one
 * with the most distinct words; on a tie the longer, then the newer) and adds each sentence of
 * the others that one sentence already kept does not say: one whose words, in their order, are not
 * all found in that order in any kept sentence. So no distinct statement is lost: "Sam likes coffee"
 * is kept beside "Sam likes tea. Lee likes coffee." (each of its words is there, not the statement), and
 * "the standup moved from Monday to Wednesday" beside "... from Wednesday to Monday". A cluster that
 * one memory's length cannot hold whole is refused (consolidation then leaves it unmerged and says so).
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
      const kept = sentencesOf(base.memory.content);
      let content = base.memory.content.trim();
      for (const { memory } of others.sort((left, right) => newerFirst(right.memory, left.memory))) {
        for (const sentence of sentencesOf(memory.content)) {
          if (kept.some((said) => isSaidBy(sentence, said))) continue;
          content = `${withFullStop(content)} ${withFullStop(sentence)}`;
          if (content.length > MAX_CONTENT_CHARS) {
            throw new Error(
              `the ${memories.length} memories of #${memories[0]?.id} say more than one memory holds (${MAX_CONTENT_CHARS} characters)`,
            );
          }
          kept.push(sentence);
        }
      }
      return { content };
    },
  };
}

function newerFirst(left: MergeCandidate, right: MergeCandidate): number {
  return Date.parse(right.createdAt) - Date.parse(left.createdAt) || right.id - left.id;
}
