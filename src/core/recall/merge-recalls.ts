import { ErrorCode, MnemeError } from '../errors.js';
import { parseInput, TopKSchema } from '../schemas.js';
import { type RecallHit, standIn, withoutDuplicates } from './recall.js';
import { factsInPlaceOfTurns } from './turn-standins.js';

/**
 * One ranking of several recalls of the same query, as one recall ranks its candidates (a viewer carries one
 * user id and sees that user's personal memories only). The result holds every one of those viewers'
 * personal memories, so it is for a reader who may see all of them (an evaluation, an administrator's tool),
 * never for a reply shown to several people: recall as the viewer a reply is for. A memory found by several
 * recalls is kept once, with its best hit (a direct match before a `graph` one, then the higher score). The
 * direct hits, best score first, then go through the rules a single recall applies: a conversation turn
 * whose facts, events or preferences are among the best `2 x topK` gives its place to them
 * (`factsInPlaceOfTurns`, ADR 22: one person's recall sees the turn, the other's the fact of it), texts
 * that say the same are kept once, and the first `topK` are kept; the linked (`graph`) hits not among those
 * follow, best first. Scores of different viewers' recalls are compared as they are: each is the same
 * weighted mean of the same terms. A `topK` that is not a whole number from 1 to 100 is refused
 * (`INVALID_INPUT`).
 */
export function mergeRecalls(results: ReadonlyArray<{ hits: readonly RecallHit[] }>, topK: number): RecallHit[] {
  const limit = parseInput(TopKSchema.unwrap(), topK, 'mergeRecalls topK');
  if (!Array.isArray(results) || !results.every((result) => Array.isArray(result?.hits))) {
    throw new MnemeError(ErrorCode.InvalidInput, 'mergeRecalls takes a list of recall results, each with its hits');
  }
  const best = new Map<number, RecallHit>();
  for (const result of results) {
    for (const hit of result.hits) {
      const known = best.get(hit.memory.id);
      const graph = hit.match === 'graph';
      const knownGraph = known?.match === 'graph';
      if (!known || (knownGraph && !graph) || (knownGraph === graph && hit.score > known.score)) {
        best.set(hit.memory.id, hit);
      }
    }
  }
  const byScore = (a: RecallHit, b: RecallHit) => b.score - a.score || a.memory.id - b.memory.id;
  const hits = [...best.values()];
  const ranked = hits.filter((hit) => hit.match !== 'graph').sort(byScore);
  const direct = withoutDuplicates(factsInPlaceOfTurns(ranked, limit * 2, standIn).sort(byScore), limit);
  const kept = new Set(direct.map((hit) => hit.memory.id));
  const linked = hits.filter((hit) => hit.match === 'graph' && !kept.has(hit.memory.id)).sort(byScore);
  return [...direct, ...linked];
}
