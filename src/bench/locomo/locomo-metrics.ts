import { type LocomoCategory, locomoCategories } from './locomo-dataset.js';

/** The cut-offs every figure is given at. */
export const cutoffs = [1, 5, 10, 20] as const;
export type Cutoff = `${(typeof cutoffs)[number]}`;

/** One retrieved item: the evidence turns in its provenance, and its length in words. */
export interface RetrievedItem {
  diaIds: readonly string[];
  words: number;
}

/** What a system returned for one question, best first. */
export interface QuestionOutcome {
  category: LocomoCategory;
  evidence: readonly string[];
  retrieved: readonly RetrievedItem[];
}

/** The figures of a set of questions; means over questions. */
export interface ScoreSummary {
  questions: number;
  /** Share of a question's evidence turns found in the top k, averaged over questions. */
  recallAt: Record<Cutoff, number>;
  /** Share of questions with at least one evidence turn in the top k. */
  anyAt: Record<Cutoff, number>;
  /** Words in the top k items together, averaged over questions: what the recall cost in context. */
  contextWordsAt: Record<Cutoff, number>;
}

/** The figures of one system: categories 1-4 together and apart, adversarial (5) apart. */
export interface EvaluationResult {
  overall: ScoreSummary;
  categories: Record<'multi-hop' | 'temporal' | 'open-domain' | 'single-hop', ScoreSummary>;
  adversarial: ScoreSummary;
}

/** The words of a text as a person counts them. */
export function countWords(text: string): number {
  return text.split(/\s+/u).filter((word) => word.length > 0).length;
}

/** Evidence turns of `outcome` found among its first `k` items. */
export function foundAt(outcome: QuestionOutcome, k: number): Set<string> {
  const wanted = new Set(outcome.evidence);
  const found = new Set<string>();
  for (const item of outcome.retrieved.slice(0, k)) {
    for (const id of item.diaIds) if (wanted.has(id)) found.add(id);
  }
  return found;
}

/** The figures of a set of questions (all zero for none). */
export function summarise(outcomes: readonly QuestionOutcome[]): ScoreSummary {
  const recallAt = {} as Record<Cutoff, number>;
  const anyAt = {} as Record<Cutoff, number>;
  const contextWordsAt = {} as Record<Cutoff, number>;
  for (const k of cutoffs) {
    let recall = 0;
    let any = 0;
    let words = 0;
    for (const outcome of outcomes) {
      const found = foundAt(outcome, k).size;
      recall += found / outcome.evidence.length;
      any += found > 0 ? 1 : 0;
      words += outcome.retrieved.slice(0, k).reduce((total, item) => total + item.words, 0);
    }
    const mean = (total: number) => (outcomes.length === 0 ? 0 : total / outcomes.length);
    recallAt[`${k}`] = round(mean(recall), 4);
    anyAt[`${k}`] = round(mean(any), 4);
    contextWordsAt[`${k}`] = round(mean(words), 1);
  }
  return { questions: outcomes.length, recallAt, anyAt, contextWordsAt };
}

/** Categories 1-4 together (`overall`) and one by one; category 5 (adversarial) apart. */
export function evaluate(outcomes: readonly QuestionOutcome[]): EvaluationResult {
  const of = (category: LocomoCategory) => outcomes.filter((outcome) => outcome.category === category);
  return {
    overall: summarise(outcomes.filter((outcome) => outcome.category !== 5)),
    categories: {
      [locomoCategories[1]]: summarise(of(1)),
      [locomoCategories[2]]: summarise(of(2)),
      [locomoCategories[3]]: summarise(of(3)),
      [locomoCategories[4]]: summarise(of(4)),
    } as EvaluationResult['categories'],
    adversarial: summarise(of(5)),
  };
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
