import Database from 'better-sqlite3';
import type { LocomoConversation } from './locomo-dataset.js';
import { countWords, type RetrievedItem } from './locomo-metrics.js';

/**
 * The baseline of `mneme eval locomo`: plain SQLite FTS5 over the raw turns of one conversation,
 * one document per turn (`"<speaker>: <text>"`), the porter tokenizer, the question's words OR-ed
 * with stopwords dropped, ranked by bm25. It shares no code with mneme.
 */
export interface TurnSearch {
  search(question: string, limit: number): RetrievedItem[];
  close(): void;
}

/**
 * English stopwords (the common short list: pronouns, articles, auxiliaries, prepositions), the list
 * that reproduces the README's reference figure. A copy, not mneme's: the baseline shares no code.
 */
const stopwords = new Set(
  `a about above after again against all am an and any are as at be because been before being below between both
  but by can could did do does doing down during each few for from further had has have having he her here hers
  herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
  once only or other our ours ourselves out over own same she should so some such than that the their theirs them
  themselves then there these they this those through to too under until up very was we were what when where which
  while who whom why will with would you your yours yourself yourselves s t d ll m re ve`
    .split(/\s+/)
    .filter((word) => word.length > 0),
);

/** The question's words (runs of letters and digits), stopwords removed, each quoted, OR-ed. */
export function baselineQuery(question: string): string {
  const words = (question.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((word) => !stopwords.has(word));
  return [...new Set(words)].map((word) => `"${word}"`).join(' OR ');
}

/** Indexes the turns of a conversation in an in-memory FTS5 table. */
export function createTurnSearch(conversation: LocomoConversation): TurnSearch {
  const database = new Database(':memory:');
  database.exec(`CREATE VIRTUAL TABLE turns USING fts5(content, dia_id UNINDEXED, tokenize = 'porter unicode61')`);
  const insert = database.prepare('INSERT INTO turns (content, dia_id) VALUES (?, ?)');
  database.transaction(() => {
    for (const turn of conversation.turns) insert.run(`${turn.speaker}: ${turn.text}`, turn.diaId);
  })();
  const search = database.prepare(
    'SELECT content, dia_id AS diaId FROM turns WHERE turns MATCH ? ORDER BY rank, rowid LIMIT ?',
  );
  return {
    search(question, limit) {
      const match = baselineQuery(question);
      if (match === '') return [];
      const rows = search.all(match, limit) as Array<{ content: string; diaId: string }>;
      return rows.map((row) => ({ diaIds: [row.diaId], words: countWords(row.content) }));
    },
    close: () => database.close(),
  };
}
