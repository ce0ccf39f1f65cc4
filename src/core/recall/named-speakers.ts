import type { Memory } from '../types.js';
import { queryTerms } from './query-terms.js';

/** The most distinct authors of candidates whose names one recall looks up (one directory read each). */
export const MAX_SPEAKER_LOOKUPS = 20;

/** A name word shorter than this ("Al", "Jo") is not matched: too many ordinary words look like it. */
export const MIN_NAME_CHARS = 3;

/** A user who said something a candidate memory comes from, with the name people call them by. */
export interface Speaker {
  id: string;
  /** The display name, or the user id when there is none. */
  name: string;
}

/**
 * The speakers a query names: those one of whose name's words (as the full-text leg sees words, at least
 * {@link MIN_NAME_CHARS} letters, stopwords aside) is a search word of the query. "What did Caroline
 * research?" names Caroline; "Where has Melanie camped?" names Melanie; a question naming both names both.
 */
export function namedSpeakers(query: string, speakers: readonly Speaker[]): Set<string> {
  const words = new Set(queryTerms(query));
  const named = new Set<string>();
  for (const speaker of speakers) {
    const nameWords = queryTerms(speaker.name).filter((word) => word.length >= MIN_NAME_CHARS);
    if (nameWords.some((word) => words.has(word))) named.add(speaker.id);
  }
  return named;
}

/** The words by which the one asking speaks of themselves ("I'm" and "I've" count as "I"). */
const FIRST_PERSON = new Set(['i', 'me', 'my', 'mine', 'myself']);

/**
 * Whether the query speaks of the one asking, in the first person singular: "What did I say about the
 * trip?", "When is my dentist appointment?", "Remind me what Sam recommended". The asking user is then
 * named as if by name: their own turns answer it. ("We" and "our" speak for a group and name no one.)
 */
export function speaksOfTheAsker(query: string): boolean {
  const words = query.toLowerCase().match(/[\p{L}\p{N}'’]+/gu) ?? [];
  return words.some((word) => FIRST_PERSON.has(word.split(/['’]/)[0] ?? ''));
}

/**
 * The `otherSpeaker` factor of a memory's score: `weight` when the query names some speaker and the
 * memory is a conversation turn (`exchange`) of another user, else 1 (no speaker named, the turn's user
 * named, a memory of no user, or not a turn). A question about what one person said or did is answered by
 * their own words, and a turn names its speaker only in its label ("Mel: I just signed up for a pottery
 * class"), while the other side's reply names them by address ("Caro: Wow, Mel! Any more paintings coming
 * up?") and matches as well. Facts, events, preferences and episodes are left alone: they name their
 * subject in their text ("Mel signed up for a pottery class"), which the query's words already match.
 */
export function otherSpeakerFactor(
  memory: Pick<Memory, 'userId' | 'category'>,
  named: ReadonlySet<string>,
  weight: number,
): number {
  if (memory.category !== 'exchange') return 1;
  if (named.size === 0 || memory.userId === null || named.has(memory.userId)) return 1;
  return weight;
}
