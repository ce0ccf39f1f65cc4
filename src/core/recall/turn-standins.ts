import type { Memory } from '../types.js';

/**
 * A conversation turn (`exchange` memory) and the facts extracted from its message say the same thing,
 * and the block should carry it once, at the place the better of them earned. An `exchange` hit is
 * left out when every message of it is cited by a better hit or by a memory among the best `window`
 * (a fact, event, preference or episode of it); the facts, events and preferences of its messages that
 * ranked below it then take its place, in their order, with `promote` (the turn's score), instead of
 * staying further down where the cut at topK may lose them. An episode is never moved up: its one or
 * two sentences stand for a whole window of messages, not for the turn.
 */
export function factsInPlaceOfTurns<T extends { memory: Pick<Memory, 'id' | 'category' | 'sourceMessageIds'> }>(
  hits: readonly T[],
  window: number,
  promote: (fact: T, turn: T) => T,
): T[] {
  const factsByMessage = new Map<number, T[]>();
  for (const hit of hits.slice(0, window)) {
    if (hit.memory.category === 'exchange') continue;
    for (const id of hit.memory.sourceMessageIds) factsByMessage.set(id, [...(factsByMessage.get(id) ?? []), hit]);
  }
  const placed = new Set<number>();
  const cited = new Set<number>();
  const result: T[] = [];
  for (const hit of hits) {
    if (placed.has(hit.memory.id)) continue;
    const sources = hit.memory.sourceMessageIds;
    const redundant =
      hit.memory.category === 'exchange' &&
      sources.length > 0 &&
      sources.every((id) => cited.has(id) || factsByMessage.has(id));
    if (!redundant) {
      placed.add(hit.memory.id);
      for (const id of sources) cited.add(id);
      result.push(hit);
      continue;
    }
    for (const id of sources) {
      for (const fact of factsByMessage.get(id) ?? []) {
        if (placed.has(fact.memory.id) || fact.memory.category === 'episode') continue;
        placed.add(fact.memory.id);
        for (const source of fact.memory.sourceMessageIds) cited.add(source);
        result.push(promote(fact, hit));
      }
      cited.add(id);
    }
  }
  return result;
}
