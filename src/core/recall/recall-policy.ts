import { z } from 'zod';

const weight = (fallback: number) =>
  z
    .number({ error: 'a weight must be a number' })
    .min(0, 'a weight must not be negative')
    .max(100, 'a weight must be at most 100')
    .default(fallback);

const unit = (fallback: number, name: string) =>
  z
    .number({ error: `${name} must be a number between 0 and 1` })
    .min(0, `${name} must be between 0 and 1`)
    .max(1, `${name} must be between 0 and 1`)
    .default(fallback);

const count = (fallback: number, name: string, max: number) =>
  z
    .number({ error: `${name} must be a whole number` })
    .int(`${name} must be a whole number`)
    .min(0, `${name} must not be negative`)
    .max(max, `${name} must be at most ${max}`)
    .default(fallback);

/** The terms of the recall score, each in 0..1. */
export const scoreTerms = ['relevance', 'importance', 'recency', 'accessFrequency', 'scope', 'pinned'] as const;
export type ScoreTerm = (typeof scoreTerms)[number];

/**
 * How much each score term counts. The score is the weighted mean of the terms, so only the ratios
 * matter; the defaults sum to 1. Relevance dominates: RRF ranks 1 and 10 differ by only 0.13 of
 * relevance, so heavier side terms would reorder matches by importance or scope instead of by match
 * (measured on LoCoMo, docs/evaluation.md); the others break near-ties.
 */
export const RecallWeightsSchema = z
  .strictObject({
    /** From the memory's fused rank (Reciprocal Rank Fusion of the legs): 1 when first in every leg. */
    relevance: weight(0.8),
    importance: weight(0.06),
    /** From the active decay policy (retention, salience or time since the last retrieval). */
    recency: weight(0.05),
    accessFrequency: weight(0.03),
    scope: weight(0.04),
    pinned: weight(0.02),
  })
  .refine((weights) => scoreTerms.some((term) => weights[term] > 0), 'at least one recall weight must be above 0');

/** The scope term of a memory by its scope: a session match counts most, global least. */
export const ScopeBonusSchema = z.strictObject({
  session: unit(1, 'the session scope bonus'),
  project: unit(0.75, 'the project scope bonus'),
  personal: unit(0.5, 'the personal scope bonus'),
  room: unit(0.25, 'the room scope bonus'),
  global: unit(0, 'the global scope bonus'),
});

/** Each search leg's candidate pool: `min(max(topK * multiplier, min), max)`. */
export const CandidatePoolSchema = z
  .strictObject({
    multiplier: count(5, 'the candidate pool multiplier', 100),
    min: count(20, 'the smallest candidate pool', 1000),
    max: count(100, 'the largest candidate pool', 1000),
  })
  .refine((pool) => pool.min <= pool.max, 'the smallest candidate pool must not exceed the largest');

/**
 * Recent-first mode (the salience system's recall): the best full-text matches, then the most recently
 * accessed visible memories that are not already among them.
 */
const RecentFirstSchema = z.strictObject({
  /** How many of the best full-text matches come first. */
  textHits: count(3, 'recentFirst.textHits', 100),
  /** How many of the most recently accessed memories are read to follow them; those already matched are dropped. */
  recentHits: count(5, 'recentFirst.recentHits', 100),
});

/** How many direct hits a recall returns when the call does not say: at least 1, at most 100. */
const topK = (fallback: number, name: string) =>
  z
    .number({ error: `${name} must be a whole number` })
    .int(`${name} must be a whole number`)
    .min(1, `${name} must be at least 1`)
    .max(100, `${name} must be at most 100`)
    .default(fallback);

/** How `recall` finds and ranks memories. */
export const RecallPolicySchema = z.strictObject({
  /** Direct hits `recall` returns when the call gives no `topK`. */
  topK: topK(10, 'recall.topK'),
  /**
   * `hybrid`: full-text and vector legs, fused and scored, plus linked memories.
   * `recent-first` (the salience system's recall): the best full-text matches, then the most recently
   * accessed memories, deduplicated; how many of each is `recentFirst`.
   */
  mode: z.enum(['hybrid', 'recent-first'], { error: 'recall mode must be hybrid or recent-first' }).default('hybrid'),
  weights: RecallWeightsSchema.prefault({}),
  scopeBonus: ScopeBonusSchema.prefault({}),
  /** The quality threshold: a memory found only by the vector leg needs at least this cosine similarity. */
  minSimilarity: unit(0.3, 'minSimilarity'),
  /**
   * What the score of a superseded memory (one a newer statement of a changed fact replaced: "I
   * switched from Vim to VS Code" after "I use Vim") is multiplied by, so the newer statement ranks
   * above it for the same query while the older stays findable ("which editor did I use before?").
   * 1 ranks them as equals; 0 puts every superseded memory last.
   */
  supersededWeight: unit(0.8, 'supersededWeight'),
  /**
   * Who said what: when the query names a speaker (a word of the display name of a user whose message a
   * candidate comes from: "What did Caroline research?"), the score of a conversation turn (`exchange`
   * memory) of another user is multiplied by this, so the named person's own turns rank above the other
   * side's replies that only address them (ADR 23). A question in the first person ("what did I say
   * about ...") names the viewer's user. 1 turns it off (and saves the name look-ups).
   */
  otherSpeakerWeight: unit(0.9, 'recall.otherSpeakerWeight'),
  /**
   * Words that go together in the viewer's memories: the query is also searched with the words its rarest
   * words share memories with ("family" with "kids", "painted" with "canvas"), as one more full-text list
   * weighing this in the fusion (the query's weighs 1), so a memory that says what the query asks in other
   * words can rank (ADR 26). Off (0) by default: it gains recall offline (LoCoMo R@10 0.779 at 0.3 against 0.771
   * off) but costs about 3.5 times the CPU of a lexical recall at 100,000 memories; 0.3 is the measured weight.
   */
  associationWeight: unit(0, 'recall.associationWeight'),
  /**
   * Who said what, for facts (ADR 26): when the query names a speaker, a fact, event or preference of
   * another user that covers less than half of the query's word weight (it matches a word of the question's
   * frame, not what is asked) has its score multiplied by this. One that matches well keeps its score. 1
   * turns it off.
   */
  otherSpeakerWeakWeight: unit(0.8, 'recall.otherSpeakerWeakWeight'),
  candidatePool: CandidatePoolSchema.prefault({}),
  /**
   * What a memory that faded (decay put it to rest; ADR 9) counts for: its score is multiplied by this, so
   * it ranks below an active memory that matches as well; a recall that returns it brings it back. 0:
   * faded memories are not searched at all.
   */
  fadedWeight: unit(0.95, 'recall.fadedWeight'),
  /** How many memories linked one hop to the hits may join them as `graph` matches; 0 turns this off. */
  graphNeighbours: count(3, 'graphNeighbours', 20),
  /** How many of the channel's latest user messages conversation-aware recall searches beside the query. */
  conversationMessages: count(3, 'conversationMessages', 20),
  /**
   * How much the recent conversation counts beside the query in conversation-aware recall: its lists
   * weigh this in the fusion (the query's weigh 1), so the question dominates and the conversation
   * breaks ties; 0 ignores the conversation.
   */
  conversationWeight: unit(0.35, 'recall.conversationWeight'),
  /** Recent-first mode: 3 full-text matches, then 5 recently accessed memories, by default. */
  recentFirst: RecentFirstSchema.prefault({}),
});

/**
 * A custom context block: `header` starts it, then one `item` per memory. Placeholders in `item`:
 * `{content}` (quoted, on one line), `{date}` (the memory's `validFrom`: when it was said), `{match}`, `{importance}` (1-5), `{sector}`,
 * `{category}`, `{scope}`, `{score}`.
 */
export const ContextTemplateSchema = z.strictObject({
  header: z
    // Only a value that is not a string gets this message; a check's own message stays its own.
    .string({
      error: (issue) => (typeof issue.input === 'string' ? undefined : 'the template header must be a string'),
    })
    .max(2000, 'the template header must be at most 2000 characters'),
  item: z
    .string({ error: (issue) => (typeof issue.input === 'string' ? undefined : 'the template item must be a string') })
    .max(2000, 'the template item must be at most 2000 characters')
    .refine((item) => item.includes('{content}'), 'the template item must contain {content}'),
});

/** How `context` recalls and formats the block it returns. */
export const ContextPolicySchema = z.strictObject({
  /** Memories `context` asks recall for when the call gives no `topK`. */
  topK: topK(5, 'context.topK'),
  /**
   * Whether `context` appends the channel's latest user messages to the query (`recall.conversationMessages`
   * of them) when the call does not say.
   */
  conversationAware: z.boolean({ error: 'context.conversationAware must be true or false' }).default(true),
  /**
   * `mneme` (the default): `[Relevant Memories]`, `- 2024-06-15 [preference]: "..."` and
   * `  (match: hybrid, importance: 5)`, the memory's category with its date.
   * `relevant-memories` (the Memo RAG design): `[Relevant Memories]`, `- 2024-06-15: "..."` and
   * `  (match: hybrid, importance: 5)`.
   * `memory-context` (the salience design): `[Memory context]` and `- "..." (semantic)`.
   * `scoped-rest` (the scoped REST design): `[Memories]` and `- [preference] "..."`.
   * Or a custom template.
   */
  format: z
    .union([z.enum(['mneme', 'relevant-memories', 'memory-context', 'scoped-rest']), ContextTemplateSchema], {
      error: 'context format must be mneme, relevant-memories, memory-context, scoped-rest or { header, item }',
    })
    .default('mneme'),
  /**
   * The quality threshold of the block: a memory whose calibrated relevance (the share of the query's
   * words it contains, weighted by their rarity, or its cosine similarity) is below this is left out, so a
   * memory that shares only a name with the question does not fill the prompt. 0 keeps every hit.
   */
  minRelevance: unit(0.1, 'context.minRelevance'),
  /** The most words the block may hold, header included; memories that do not fit are left out. */
  wordBudget: z
    .number({ error: 'wordBudget must be a whole number' })
    .int('wordBudget must be a whole number')
    .min(10, 'wordBudget must be at least 10')
    .max(100_000, 'wordBudget must be at most 100000')
    .default(400),
});

export type RecallPolicy = z.output<typeof RecallPolicySchema>;
export type RecallWeights = z.output<typeof RecallWeightsSchema>;
export type ContextPolicy = z.output<typeof ContextPolicySchema>;
export type ContextTemplate = z.output<typeof ContextTemplateSchema>;
