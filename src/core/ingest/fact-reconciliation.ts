import type { MemoryChanges } from '../../storage/memory-store.js';
import { factSubject } from '../fact-subject.js';
import type { ExtractedFact } from '../ports/fact-extractor.js';
import { ownerKey, sectorOf } from '../scope.js';
import { jaccard, wordSet } from '../similarity.js';
import type { Memory } from '../types.js';

/** One extracted fact, placed: its text, the owner key it is stored under, the message it comes from. */
export interface PlacedFact {
  content: string;
  owner: string;
  messageId: number;
}

/** What `reconcileFact` compares a fact with, and how. */
export interface ReconciliationOptions {
  /** Jaccard word overlap at or above which two texts say the same thing (`similarityThreshold`). */
  threshold: number;
  /** The speaker's display name: its words, and "others", are left out, as every fact about the speaker shares them. */
  speaker: string;
  /** Facts of the same message already to be inserted, with their owner keys. */
  pending: ReadonlyArray<{ content: string; owner: string }>;
}

/** What reconciliation reads of a memory: its text, the ids of its owner key, the messages it cites. */
export type ReconciliationCandidate = Pick<
  Memory,
  'content' | 'scope' | 'userId' | 'channelId' | 'projectId' | 'topicId' | 'sourceMessageIds'
>;

/** What to do with one extracted fact. */
export type FactReconciliation<Candidate extends ReconciliationCandidate> =
  | { action: 'insert' }
  | { action: 'update'; memory: Candidate }
  | { action: 'done'; memory: Candidate }
  | { action: 'repeated' };

/**
 * Decides what one fact of a message writes, given the memories found for that message. Only
 * candidates of the fact's owner and about the same subject are compared (`factSubject`, read with
 * the speaker: "Sam's team" and "Lee's team" are different facts however alike; a fact whose subject
 * cannot be told is compared with any); the closest (the first of equals) by Jaccard word overlap
 * decides: at or above the threshold it is updated (`update`), or left alone when it already
 * cites the message (`done`: an earlier run or fact did the work); below it, or with no candidate,
 * the fact is new (`insert`). A fact that says what a pending fact of the same owner and subject
 * says is `repeated`: nothing to write. No I/O.
 */
export function reconcileFact<Candidate extends ReconciliationCandidate>(
  fact: PlacedFact,
  candidates: readonly Candidate[],
  options: ReconciliationOptions,
): FactReconciliation<Candidate> {
  const ignore = [...wordSet(options.speaker, { keepStopWords: true }), 'others'];
  const words = wordSet(fact.content, { ignore });
  const subject = factSubject(fact.content, options.speaker);
  const isAboutSubject = (content: string) => {
    const other = factSubject(content, options.speaker);
    return subject === null || other === null || other === subject;
  };
  const isRepeated = options.pending.some(
    (pending) =>
      pending.owner === fact.owner &&
      isAboutSubject(pending.content) &&
      jaccard(words, wordSet(pending.content, { ignore })) >= options.threshold,
  );
  if (isRepeated) return { action: 'repeated' };
  let closest: { memory: Candidate; score: number } | null = null;
  for (const memory of candidates) {
    if (ownerKey(memory.scope, memory) !== fact.owner || !isAboutSubject(memory.content)) continue;
    const score = jaccard(words, wordSet(memory.content, { ignore }));
    if (!closest || score > closest.score) closest = { memory, score };
  }
  if (!closest || closest.score < options.threshold) return { action: 'insert' };
  if (closest.memory.sourceMessageIds.includes(fact.messageId)) return { action: 'done', memory: closest.memory };
  return { action: 'update', memory: closest.memory };
}

/**
 * The changes that fold a fact of a message (its id, and when it was said in epoch milliseconds) into
 * `memory`: the message cited, the higher importance, the fact's text when it differs, its category
 * unless the memory is pinned, and the time it was said when that is later than the memory's
 * `validFrom` (a memory's time is that of the latest message saying it). The new text's vector is
 * left to the caller.
 */
export function factChanges(
  memory: Pick<Memory, 'content' | 'category' | 'importance' | 'pinned' | 'sourceMessageIds' | 'validFrom'>,
  fact: ExtractedFact,
  message: { id: number; saidAt: number },
): MemoryChanges {
  const changes: MemoryChanges = {
    sourceMessageIds: [...memory.sourceMessageIds, message.id],
    importance: Math.max(memory.importance, fact.importance),
  };
  if (message.saidAt > Date.parse(memory.validFrom)) changes.validFrom = message.saidAt;

  if (memory.content !== fact.content) changes.content = fact.content;
  if (memory.category !== fact.category && !memory.pinned) {
    changes.category = fact.category;
    changes.sector = sectorOf(fact.category);
  }
  return changes;
}
