import type { LinkType } from '../../storage/link-store.js';
import type { MemoryTouch, SearchHit } from '../../storage/memory-store.js';
import { type AccessView, everyAccess } from '../access-view.js';
import { toIso } from '../clock.js';
import { currentValues } from '../current-values.js';
import { reinforcement } from '../decay/decay.js';
import type { EngineContext } from '../engine-context.js';
import { errorMessage } from '../errors.js';
import { parseInput, RecallInputSchema } from '../schemas.js';
import { ownerKey, visibleOwners } from '../scope.js';
import type { TouchQueue } from '../touch-queue.js';
import type { Memory, Viewer } from '../types.js';
import {
  coverage,
  inverseDocumentFrequency,
  textStems,
  type WeightedTerms,
  weightedTerms,
} from './calibrated-relevance.js';
import {
  type FusedCandidate,
  listWeight,
  type RankedList,
  RRF_K,
  reciprocalRankFusion,
  relevanceOf,
} from './fusion.js';
import { MAX_SPEAKER_LOOKUPS, namedSpeakers, otherSpeakerFactor, speaksOfTheAsker } from './named-speakers.js';
import { queryTerms, shapeQueries } from './query-terms.js';
import { type RecallPolicy, type RecallWeights, scoreTerms } from './recall-policy.js';
import { type ScoreBreakdown, scoreBreakdown, weightedScore } from './scoring.js';
import { associatedSearchWords } from './term-associations.js';
import { factsInPlaceOfTurns } from './turn-standins.js';

/**
 * `hybrid`: both legs, fused, scored and expanded by links. `recent-first`: the best full-text matches,
 * then the most recently accessed memories (the policy's `recall.recentFirst`, 3 + 5 by default).
 */
export type RecallMode = 'hybrid' | 'recent-first';

/**
 * How a hit was found: by the full-text leg, the vector leg, both, a link to another hit (`graph`),
 * or, in recent-first mode, by being among the most recently accessed memories (`recent`).
 */
export type MatchType = 'fts' | 'vector' | 'hybrid' | 'graph' | 'recent';

/** Whether the vector leg ran, and if not why: recall was then lexical only. */
export type VectorLegStatus = 'used' | 'no-model' | 'model-failed' | 'not-in-mode';

/** One memory a recall returned, with the reasons it was chosen. */
export interface RecallHit {
  /**
   * The memory after this retrieval (access count and reinforcement applied, unless `inspect`), its
   * strength, salience and importance as of now under the decay policy.
   */
  memory: Memory;
  /** Weighted mean of the breakdown, 0..1; computed for this recall, never stored. */
  score: number;
  /** Each score term, 0..1, as it was before this retrieval touched the memory. */
  breakdown: ScoreBreakdown;
  match: MatchType;
  /** The best 1-based rank the memory had in each leg, or null when that leg did not find it. */
  ranks: { fts: number | null; vector: number | null };
  /** The highest cosine similarity the vector leg measured for it, or null. */
  similarity: number | null;
  /**
   * How well the memory matches the query, comparable across queries (0..1), unlike the rank-based
   * relevance term: the share of the query's words it contains, each word weighted by how rare it is
   * among the memories, or its cosine similarity, whichever is higher (the recent conversation's lists
   * count at their weight). A graph match: its link's strength times the calibrated relevance of the hit
   * it is linked to. The context's quality threshold (`context.minRelevance`) reads it.
   */
  calibratedRelevance: number;
  /** For a `graph` match: the hit it is linked to, and how. */
  linkedTo: { id: number; type: LinkType; strength: number } | null;
  /** With `explain`: the ranks and the score as one line of text. */
  explanation?: string;
}

/** What `recall` returns. */
export interface RecallResult {
  mode: RecallMode;
  /** Direct hits best first (at most topK), then up to 3 `graph` matches. */
  hits: RecallHit[];
  vectorLeg: VectorLegStatus;
  /** The texts that were searched: the query (with conversation appended) and the short query of the 7-word rule. */
  queries: string[];
  /** The weights the scores were computed with. */
  weights: RecallWeights;
}

/** The parsed input of a recall, as `recall` and `context` hand it to the pipeline. */
export interface RecallRequest {
  query: string;
  viewer: Viewer;
  topK: number;
  explain: boolean;
  mode?: RecallMode | undefined;
  conversationAware: boolean;
}

/** Each leg's candidate pool for `topK` hits: `min(max(topK * 5, 20), 100)` with the default policy. */
export function candidatePoolSize(
  topK: number,
  pool: RecallPolicy['candidatePool'] = { multiplier: 5, min: 20, max: 100 },
): number {
  return Math.min(Math.max(topK * pool.multiplier, pool.min), pool.max);
}

/**
 * Finds the memories that matter for a query, on behalf of a viewer: full-text and vector legs
 * restricted to the viewer's scopes, fused by RRF (k = 60), scored by the recall policy, joined by
 * up to 3 linked memories; every returned memory is touched (access count, reinforcement) through
 * `touches`, best effort, unless the request is `inspect` (then nothing is written). Hits show their
 * memories' values as of now. A bounded number of storage calls, whatever topK is (the names of at most
 * `MAX_SPEAKER_LOOKUPS` authors among them).
 */
export async function recall(
  context: EngineContext,
  input: unknown,
  touches: TouchQueue,
  view: AccessView = everyAccess,
): Promise<RecallResult> {
  const parsed = parseInput(RecallInputSchema, input, 'recall input');
  const request = { ...parsed, topK: parsed.topK ?? context.policy.recall.topK };
  const result = await findHits(context, request, view);
  const current = await currentValues(
    context,
    result.hits.map((hit) => hit.memory),
  );
  const hits = request.inspect ? result.hits : await touchHits(context, result.hits, touches);
  // As the reader is shown retrievals (ADR 52), before the values are made current: they decay from the last access.
  return { ...result, hits: hits.map((hit) => ({ ...hit, memory: current(view(hit.memory)) })) };
}

/**
 * The recall pipeline without the touch: `context` touches only the hits that fit its block. Memories are scored as
 * `view` shows their retrievals (ADR 52): a user key's recall ranks others' memories as never retrieved.
 */
export async function findHits(
  context: EngineContext,
  request: RecallRequest,
  view: AccessView = everyAccess,
): Promise<RecallResult> {
  const { policy } = context;
  const now = context.clock.now();
  const owners = visibleOwners(request.viewer);
  const mode = request.mode ?? policy.recall.mode;
  const { conversation, answered } = await conversationOf(context, request);
  const queries = shapeQueries(request.query);
  const weights = policy.recall.weights;
  const explain = (hit: RecallHit) => (request.explain ? { ...hit, explanation: explanationOf(hit, weights) } : hit);

  if (mode === 'recent-first') {
    const [text = request.query] = queries;
    const hits = await recentFirstHits(context, text, owners, request.topK, now, view);
    return { mode, hits: hits.map(explain), vectorLeg: 'not-in-mode', queries: [text], weights };
  }

  const pool = candidatePoolSize(request.topK, policy.recall.candidatePool);
  const includeFaded = policy.recall.fadedWeight > 0;
  // The short query of the 7-word rule goes to the vector leg only: its words are a subset of the full
  // query's, so as a second full-text list it would only re-weight towards the first five words.
  // The recent conversation is searched beside the question, in lists of its own that weigh less
  // (`recall.conversationWeight`), so the question dominates and the conversation breaks ties.
  const [fullQuery = request.query] = queries;
  const conversationWeight = conversation === null ? 0 : policy.recall.conversationWeight;
  const texts = [
    { text: fullQuery, weight: 1 },
    ...(conversationWeight > 0 && conversation !== null ? [{ text: conversation, weight: conversationWeight }] : []),
  ];
  const textLists = await Promise.all(
    texts.map(async ({ text, weight }): Promise<RankedList | null> => {
      const terms = queryTerms(text);
      if (terms.length === 0) return null;
      const hits = await context.storage.memories.searchText({ terms, owners, limit: pool, includeFaded });
      return { leg: 'fts', hits, weight };
    }),
  );
  const vectorTexts = [...queries.map((text) => ({ text, weight: 1 })), ...texts.filter((text) => text.weight < 1)];
  const { lists: vectorLists, status: vectorLeg } = await vectorSearch(
    context,
    vectorTexts,
    owners,
    pool,
    includeFaded,
  );
  const counted = await countTerms(context, texts, owners);
  const associated = await associationList(
    context,
    fullQuery,
    counted,
    owners,
    pool,
    includeFaded,
    textLists[0]?.hits ?? [],
  );
  const lists = [...textLists, ...vectorLists, associated].filter((list): list is RankedList => list !== null);

  const candidates = reciprocalRankFusion(lists);
  const memories = await context.storage.memories.get(candidates.map((candidate) => candidate.id));
  const byId = new Map(memories.map((memory) => [memory.id, memory]));
  const visible = new Set(owners);
  const weighted = weightedTexts(texts, counted);
  const named = await speakersNamed(context, fullQuery, candidates, byId, request.viewer.userId);
  const totalWeight = listWeight(lists);
  const ranked = candidates
    .flatMap((candidate) => {
      const memory = byId.get(candidate.id);
      if (!memory || !stillRecallable(memory, visible) || isTheMessageAnswered(memory, answered)) return [];
      return [directHit(context, memory, candidate, relevanceOf(candidate.fused, totalWeight), now, named, view)];
    })
    .sort(byScore)
    .map((entry, index) =>
      index < request.topK * WEAK_MATCH_DEPTH ? weakMatchOfAnother(context, entry, named, weighted) : entry,
    )
    .sort(byScore)
    .map((entry) => entry.hit);
  // The calibrated relevance ranks nothing: it is measured for the hits returned only (stemming every
  // candidate's text was the largest share of a lexical recall).
  const direct = withoutDuplicates(
    factsInPlaceOfTurns(ranked, request.topK * 2, standIn).sort((a, b) => b.score - a.score),
    request.topK,
  )
    .slice(0, request.topK)
    .map((hit) => ({
      ...hit,
      calibratedRelevance: Math.max(lexicalRelevance(weighted, hit.memory.content), hit.calibratedRelevance),
    }));

  const linked = await graphHits(context, direct, owners, now, view);
  const searched = [...queries, ...(conversationWeight > 0 && conversation !== null ? [conversation] : [])];
  return { mode, hits: [...direct, ...linked].map(explain), vectorLeg, queries: searched, weights };
}

type RankedEntry = { hit: RecallHit; fused: number };

function byScore(a: RankedEntry, b: RankedEntry): number {
  return b.hit.score - a.hit.score || b.fused - a.fused || a.hit.memory.id - b.hit.memory.id;
}

/** How far down the candidates, in multiples of topK, weak matches of another user's memories are looked for. */
export const WEAK_MATCH_DEPTH = 4;
/** A memory covering less than this share of the query's word weight (calibrated lexical relevance) matches weakly. */
export const WEAK_MATCH = 0.5;

/**
 * Who said what, for facts (ADR 26): when the query names a speaker, a fact, event or preference of another
 * user that covers less than {@link WEAK_MATCH} of the query's word weight ("Caroline couldn't have done it
 * without them" for "What has Melanie done with her family?": a word of the question's frame) has its score
 * multiplied by `recall.otherSpeakerWeakWeight`. One that matches well keeps its place: a question naming the
 * wrong person ("What did Melanie realize after the charity race?", Caroline's) still finds it. Turns have
 * their own factor (`otherSpeakerFactor`); episodes are left alone.
 */
function weakMatchOfAnother(
  context: EngineContext,
  entry: RankedEntry,
  named: ReadonlySet<string>,
  weighted: ReadonlyArray<{ terms: WeightedTerms; weight: number }>,
): RankedEntry {
  const weight = context.policy.recall.otherSpeakerWeakWeight;
  const { memory } = entry.hit;
  if (weight >= 1 || named.size === 0 || memory.userId === null || named.has(memory.userId)) return entry;
  if (memory.category === 'exchange' || memory.category === 'episode') return entry;
  if (lexicalRelevance(weighted, memory.content) >= WEAK_MATCH) return entry;
  const breakdown = { ...entry.hit.breakdown, otherSpeaker: weight };
  return {
    ...entry,
    hit: { ...entry.hit, breakdown, score: weightedScore(breakdown, context.policy.recall.weights) },
  };
}

/**
 * A fact in place of its turn (see `factsInPlaceOfTurns`): the turn's score, times the fact's own factors (a
 * superseded or faded fact keeps its penalty, so a newer statement still comes first), when that is higher.
 */
export function standIn(fact: RecallHit, turn: RecallHit): RecallHit {
  const { superseded = 1, faded = 1 } = fact.breakdown;
  const score = turn.score * superseded * faded;
  return score > fact.score ? { ...fact, score } : fact;
}

/**
 * The users the query names among the authors of the candidates (ADR 23): the first
 * `MAX_SPEAKER_LOOKUPS` distinct authors, best candidates first, each looked up once in the directory for
 * their display name; and the viewer's user (`asker`) when the query speaks of them in the first person
 * ("what did I say about ..."). Empty, with no look-up, when `recall.otherSpeakerWeight` is 1.
 */
async function speakersNamed(
  context: EngineContext,
  query: string,
  candidates: readonly FusedCandidate[],
  byId: ReadonlyMap<number, Memory>,
  asker: string | undefined,
): Promise<Set<string>> {
  if (context.policy.recall.otherSpeakerWeight >= 1) return new Set();
  const authors = new Set<string>();
  for (const candidate of candidates) {
    const userId = byId.get(candidate.id)?.userId;
    if (userId) authors.add(userId);
    if (authors.size >= MAX_SPEAKER_LOOKUPS) break;
  }
  if (authors.size < 2) return new Set();
  const speakers = await Promise.all(
    [...authors].map(async (id) => ({ id, name: (await context.storage.directory.getUser(id))?.displayName ?? id })),
  );
  const named = namedSpeakers(query, speakers);
  if (asker && speaksOfTheAsker(query)) named.add(asker);
  return named;
}

/** How many of the memories of `owners` (the viewer's; ADR 25) hold each word of the search texts: one storage call. */
interface CountedTerms {
  memories: number;
  counts: ReadonlyMap<string, number>;
}

async function countTerms(
  context: EngineContext,
  texts: ReadonlyArray<{ text: string }>,
  owners: readonly string[],
): Promise<CountedTerms> {
  const terms = [...new Set(texts.flatMap(({ text }) => queryTerms(text)))];
  const counted = terms.length === 0 ? null : await context.storage.memories.termCounts(terms, { owners });
  return {
    memories: counted?.memories ?? 0,
    counts: new Map(terms.map((term, index) => [term, counted?.counts[index] ?? 0])),
  };
}

/** The search texts' words with their weights, each text with the weight its lists have; rarity from `counted`. */
function weightedTexts(
  texts: ReadonlyArray<{ text: string; weight: number }>,
  counted: CountedTerms,
): Array<{ terms: WeightedTerms; weight: number }> {
  const idf = (term: string) => inverseDocumentFrequency(counted.memories, counted.counts.get(term) ?? 0);
  return texts.map(({ text, weight }) => ({ terms: weightedTerms(text, idf), weight }));
}

/**
 * The query's words and those its rarest words are associated with in the viewer's memories
 * (`associatedSearchWords`, ADR 26), as one more full-text list weighing `recall.associationWeight`; null when
 * that is 0 or no word is associated. Only the associated words are searched: a memory of the first pass's
 * list (`first`, the query's full-text hits) adds its score there to theirs, as a full-text score sums over the
 * words it matches (BM25 on SQLite, idf x `ts_rank` a lexeme on PostgreSQL), so the query's words are not
 * searched a second time (ADR 26, session 7).
 */
async function associationList(
  context: EngineContext,
  query: string,
  counted: CountedTerms,
  owners: readonly string[],
  pool: number,
  includeFaded: boolean,
  first: readonly SearchHit[],
): Promise<RankedList | null> {
  const weight = context.policy.recall.associationWeight;
  const terms = queryTerms(query);
  if (weight <= 0 || terms.length === 0) return null;
  const counts = { memories: counted.memories, counts: terms.map((term) => counted.counts.get(term) ?? 0) };
  const words = await associatedSearchWords(context.storage.memories, terms, counts, owners, includeFaded);
  if (words.length === 0) return null;
  const extra = await context.storage.memories.searchText({ terms: words, owners, limit: pool, includeFaded });
  const scores = new Map(first.map((hit) => [hit.id, hit.score]));
  for (const hit of extra) scores.set(hit.id, (scores.get(hit.id) ?? 0) + hit.score);
  const hits = [...scores]
    .map(([id, score]) => ({ id, score }))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, pool);
  return { leg: 'fts', hits, weight };
}

/** The best weighted coverage of a memory's text by any search text (the calibrated lexical relevance). */
function lexicalRelevance(texts: ReadonlyArray<{ terms: WeightedTerms; weight: number }>, content: string): number {
  const stems = textStems(content);
  return Math.max(0, ...texts.map(({ terms, weight }) => weight * coverage(terms, stems)));
}

/**
 * Records the retrieval of every hit in one write (access count + 1, last accessed now,
 * reinforcement per the decay policy) and returns the hits with their memories as stored by it.
 * Best effort: when the database does not take the write (locked by another process, read-only),
 * `touches` keeps it for later and the hits are returned all the same.
 */
export async function touchHits(
  context: EngineContext,
  hits: readonly RecallHit[],
  touches: TouchQueue,
): Promise<RecallHit[]> {
  if (hits.length === 0) return [];
  const now = context.clock.now();
  const touched = hits.map((hit) => ({ hit, reinforced: reinforcement(hit.memory, context.policy, now) }));
  await touches.record(
    touched.map(
      ({ hit, reinforced }): MemoryTouch => ({
        id: hit.memory.id,
        ...reinforced,
        // Computed from these: not written over an edit, a decay step or a retrieval that lands first (attack 31c).
        read: { strength: hit.memory.strength, salience: hit.memory.salience, importance: hit.memory.importance },
      }),
    ),
    now,
  );
  return touched.map(({ hit, reinforced }) => ({
    ...hit,
    memory: { ...hit.memory, ...reinforced, accessCount: hit.memory.accessCount + 1, lastAccessedAt: toIso(now) },
  }));
}

/**
 * What the viewer's channel says about the query: `answered`, the id of its latest user message when
 * that message is the query itself (the message being answered, never recalled as a memory of itself);
 * `conversation`, with conversation-aware recall, its latest user messages besides that one, oldest
 * first, as one text (null when there is none).
 */
async function conversationOf(
  context: EngineContext,
  request: RecallRequest,
): Promise<{ conversation: string | null; answered: number | null }> {
  const channelId = request.viewer.channelId;
  if (!channelId) return { conversation: null, answered: null };
  const wanted = request.conversationAware ? context.policy.recall.conversationMessages : 0;
  const messages = await context.storage.messages.recentUserMessages(channelId, Math.max(1, wanted));
  const latest = messages.at(-1);
  const answered = latest && sameText(latest.content, request.query) ? latest.id : null;
  const others = messages
    .slice(-Math.max(1, wanted))
    .filter((message) => message.id !== answered && !sameText(message.content, request.query))
    .map((message) => message.content.trim())
    .filter((content) => content.length > 0);
  return { conversation: wanted > 0 && others.length > 0 ? others.join('\n') : null, answered };
}

function sameText(a: string, b: string): boolean {
  const normal = (text: string) => text.trim().replace(/\s+/g, ' ').toLowerCase();
  return normal(a) === normal(b);
}

/**
 * Whether a memory the legs found may be returned when its row is read: the legs and the row are read by
 * separate statements, and a `forget` (or a merge) that lands between them (another request of the same
 * process while the query is embedded, or another process) archives it; recall never returns such a
 * memory (a faded one, archived by decay, stays recallable: ADR 9). Its owner key is checked again
 * against the viewer's (`visible`) too: every leg filters on it in its query, and this keeps a leg's
 * stale or torn answer (an in-memory snapshot of the vector lists, say) from ever reaching another viewer.
 */
function stillRecallable(memory: Memory, visible: ReadonlySet<string>): boolean {
  return (memory.archivedAt === null || memory.fadedAt !== null) && visible.has(ownerKey(memory.scope, memory));
}

/** A memory made only of the message being answered (its own exchange memory): not a memory of it. */
function isTheMessageAnswered(memory: Memory, answered: number | null): boolean {
  return (
    answered !== null && memory.sourceMessageIds.length > 0 && memory.sourceMessageIds.every((id) => id === answered)
  );
}

/**
 * Keeps the first (best) of hits with the same content, spaces and case aside: copies of one turn (a
 * message said twice, an exchange stored in two channels) give the block nothing twice. At most `limit`.
 */
export function withoutDuplicates(hits: readonly RecallHit[], limit = Number.POSITIVE_INFINITY): RecallHit[] {
  const seen = new Set<string>();
  const kept: RecallHit[] = [];
  for (const hit of hits) {
    if (kept.length >= limit) break;
    const key = hit.memory.content.trim().replace(/\s+/g, ' ').toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    kept.push(hit);
  }
  return kept;
}

/** How long a recall waits for its query's embedding by default (`EngineContext.queryEmbedTimeoutMs`). */
const QUERY_EMBED_TIMEOUT_MS = 15_000;

/**
 * The vector leg: one embedding call for every query text, one KNN per text. Neighbours below the
 * quality threshold (`minSimilarity`) are dropped before fusion: the nearest of unrelated memories
 * is not a match.
 */
async function vectorSearch(
  context: EngineContext,
  queries: ReadonlyArray<{ text: string; weight: number }>,
  owners: readonly string[],
  pool: number,
  includeFaded: boolean,
): Promise<{ lists: RankedList[]; status: VectorLegStatus }> {
  const { embedder } = context;
  if (!embedder) return { lists: [], status: 'no-model' };
  let vectors: Float32Array[];
  const timeoutMs = context.queryEmbedTimeoutMs ?? QUERY_EMBED_TIMEOUT_MS;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    vectors = await embedder.embed(
      queries.map((query) => query.text),
      'query',
      { signal },
    );
  } catch (error) {
    const why = signal.aborted ? `it did not answer within ${timeoutMs} ms` : errorMessage(error);
    context.logger.warn(`embedding the query with ${embedder.modelId} failed, recall is lexical only: ${why}`);
    return { lists: [], status: 'model-failed' };
  }
  const lists = await Promise.all(
    vectors.map(async (vector, index): Promise<RankedList> => {
      const hits = await context.storage.memories.searchVector({
        vector,
        model: embedder.modelId,
        owners,
        limit: pool,
        includeFaded,
      });
      return {
        leg: 'vector',
        hits: hits.filter((hit) => hit.score >= context.policy.recall.minSimilarity),
        weight: queries[index]?.weight ?? 1,
      };
    }),
  );
  return { lists, status: 'used' };
}

/** A direct hit; its `calibratedRelevance` is the vector leg's share of it until the full-text one is measured. */
function directHit(
  context: EngineContext,
  memory: Memory,
  candidate: FusedCandidate,
  relevance: number,
  now: number,
  named: ReadonlySet<string>,
  view: AccessView,
): { hit: RecallHit; fused: number } {
  const otherSpeaker = otherSpeakerFactor(memory, named, context.policy.recall.otherSpeakerWeight);
  const breakdown = {
    ...scoreBreakdown(view(memory), relevance, context.policy, now),
    ...(otherSpeaker < 1 ? { otherSpeaker } : {}),
  };
  const match: MatchType = candidate.ftsRank === null ? 'vector' : candidate.vectorRank === null ? 'fts' : 'hybrid';
  return {
    fused: candidate.fused,
    hit: {
      memory,
      score: weightedScore(breakdown, context.policy.recall.weights),
      breakdown,
      match,
      ranks: { fts: candidate.ftsRank, vector: candidate.vectorRank },
      similarity: candidate.similarity,
      calibratedRelevance: candidate.weightedSimilarity ?? 0,
      linkedTo: null,
    },
  };
}

/**
 * Up to `graphNeighbours` active memories linked one hop (either direction) to the direct hits and
 * visible to the viewer, as `graph` matches after every direct hit. Their relevance is the link's
 * strength times the relevance of the hit they are linked to. The links and the rows are read by separate
 * statements: a row archived (a forget, a merge, decay) or moved out of the viewer's owner keys (an audience change)
 * by a write that lands between them is left out, as the direct hits' are (attack 31c).
 */
async function graphHits(
  context: EngineContext,
  direct: readonly RecallHit[],
  owners: readonly string[],
  now: number,
  view: AccessView,
): Promise<RecallHit[]> {
  const limit = context.policy.recall.graphNeighbours;
  if (direct.length === 0 || limit === 0) return [];
  const seeds = new Map(direct.map((hit) => [hit.memory.id, hit]));
  const neighbours = await context.storage.links.neighbours([...seeds.keys()], owners, limit);
  if (neighbours.length === 0) return [];
  const memories = await context.storage.memories.get(neighbours.map((neighbour) => neighbour.id));
  const visible = new Set(owners);
  const byId = new Map(
    memories
      .filter((memory) => memory.archivedAt === null && visible.has(ownerKey(memory.scope, memory)))
      .map((memory) => [memory.id, memory]),
  );
  return neighbours
    .flatMap((neighbour): RecallHit[] => {
      const memory = byId.get(neighbour.id);
      if (!memory) return [];
      const seed = seeds.get(neighbour.linkedTo);
      const seedRelevance = seed?.breakdown.relevance ?? 0;
      const breakdown = scoreBreakdown(view(memory), seedRelevance * neighbour.strength, context.policy, now);
      return [
        {
          memory,
          score: weightedScore(breakdown, context.policy.recall.weights),
          breakdown,
          match: 'graph',
          ranks: { fts: null, vector: null },
          similarity: null,
          calibratedRelevance: (seed?.calibratedRelevance ?? 0) * neighbour.strength,
          linkedTo: { id: neighbour.linkedTo, type: neighbour.type, strength: neighbour.strength },
        },
      ];
    })
    .sort((a, b) => b.score - a.score || a.memory.id - b.memory.id);
}

/**
 * The salience system's recall: the best full-text matches, then the most recently accessed visible
 * memories that are not already among them (how many of each: `recall.recentFirst`), at most `topK`.
 */
async function recentFirstHits(
  context: EngineContext,
  text: string,
  owners: readonly string[],
  topK: number,
  now: number,
  view: AccessView,
): Promise<RecallHit[]> {
  const terms = queryTerms(text);
  const { textHits: textLimit, recentHits: recentLimit } = context.policy.recall.recentFirst;
  const [textHits, recent] = await Promise.all([
    terms.length === 0 || textLimit === 0
      ? Promise.resolve([])
      : context.storage.memories.searchText({
          terms,
          owners,
          limit: textLimit,
          includeFaded: context.policy.recall.fadedWeight > 0,
        }),
    context.storage.memories.recentlyAccessed(owners, recentLimit, view.own),
  ]);
  const [matched, counted] = await Promise.all([
    context.storage.memories.get(textHits.map((hit) => hit.id)),
    countTerms(context, [{ text }], owners),
  ]);
  const [weighted] = weightedTexts([{ text, weight: 1 }], counted);
  const hit = (memory: Memory, match: MatchType, ftsRank: number | null): RecallHit => {
    const relevance = ftsRank === null ? 0 : relevanceOf(1 / (RRF_K + ftsRank), 1);
    const breakdown = scoreBreakdown(view(memory), relevance, context.policy, now);
    return {
      memory,
      score: weightedScore(breakdown, context.policy.recall.weights),
      breakdown,
      match,
      ranks: { fts: ftsRank, vector: null },
      similarity: null,
      calibratedRelevance: weighted ? lexicalRelevance([weighted], memory.content) : 0,
      linkedTo: null,
    };
  };
  const seen = new Set<number>();
  const hits: RecallHit[] = [];
  const visible = new Set(owners);
  matched
    .filter((memory) => stillRecallable(memory, visible))
    .forEach((memory, index) => {
      seen.add(memory.id);
      hits.push(hit(memory, 'fts', index + 1));
    });
  for (const memory of recent) {
    if (seen.has(memory.id)) continue;
    seen.add(memory.id);
    hits.push(hit(memory, 'recent', null));
  }
  return hits.slice(0, topK);
}

const termLabels: Record<(typeof scoreTerms)[number], string> = {
  relevance: 'relevance',
  importance: 'importance',
  recency: 'recency',
  accessFrequency: 'access',
  scope: 'scope',
  pinned: 'pinned',
};

/** `fts #1, vector #3 (cosine 0.71), calibrated 0.64 | relevance 0.98x0.55 + importance 0.80x0.15 + ... = 0.812` */
function explanationOf(hit: RecallHit, weights: RecallWeights): string {
  const found =
    hit.match === 'graph' && hit.linkedTo
      ? `linked to #${hit.linkedTo.id} (${hit.linkedTo.type}, strength ${hit.linkedTo.strength.toFixed(2)})`
      : hit.match === 'recent'
        ? 'recently accessed'
        : [
            hit.ranks.fts === null ? null : `fts #${hit.ranks.fts}`,
            hit.ranks.vector === null
              ? null
              : `vector #${hit.ranks.vector} (cosine ${(hit.similarity ?? 0).toFixed(2)})`,
            `calibrated ${hit.calibratedRelevance.toFixed(2)}`,
          ]
            .filter((part) => part !== null)
            .join(', ');
  const terms = scoreTerms
    .map((term) => `${termLabels[term]} ${hit.breakdown[term].toFixed(2)}x${weights[term]}`)
    .join(' + ');
  const { superseded = 1, faded = 1, otherSpeaker = 1 } = hit.breakdown;
  const factors = [
    superseded < 1 ? ` x${superseded} (superseded by #${hit.memory.supersededBy})` : '',
    otherSpeaker < 1 ? ` x${otherSpeaker} (the query names someone else than who said it)` : '',
    faded < 1 && hit.memory.fadedAt !== null
      ? ` x${faded} (faded ${hit.memory.fadedAt.slice(0, 10)}: decay put it to rest; this recall brings it back)`
      : '',
  ].join('');
  return `${found} | ${terms}${factors} = ${hit.score.toFixed(3)}`;
}
