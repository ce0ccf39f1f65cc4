import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ChatModel, EmbeddingModel, Memory, Mneme, Viewer } from '../../index.js';
import { createMneme } from '../../index.js';
import type { ProgressBar } from '../progress-bar.js';
import { type LocomoConversation, loadLocomo } from './locomo-dataset.js';
import { createTurnSearch } from './locomo-fts-baseline.js';
import {
  countWords,
  type EvaluationResult,
  evaluate,
  type QuestionOutcome,
  type RetrievedItem,
} from './locomo-metrics.js';

/** What one `mneme eval locomo` run does. */
export interface LocomoOptions {
  dataPath: string;
  /** Only these sample ids (all when left out). */
  conversations?: readonly string[];
  /** An existing folder for the per-conversation databases; each is deleted after use. */
  directory: string;
  progress: (label: string, total: number) => ProgressBar;
  /** mneme's embedding model: `'none'` (offline, the default) or any `createMneme` setting or model. */
  embedder?: EmbeddingModel | string;
  /** mneme's chat model: `'none'` (offline, the default) or any `createMneme` setting or model. */
  chat?: ChatModel | string;
  /** Where the providers named by `embedder` and `chat` are. */
  providers?: Parameters<typeof createMneme>[0]['providers'];
}

/** The most memories a question is scored on (the largest cut-off). */
export const RETRIEVED = 20;

/** What one conversation looked like in mneme after ingest, extraction and maintenance. */
export interface ConversationInfo {
  sampleId: string;
  turns: number;
  questions: number;
  skippedQuestions: number;
  /** Active memories by category. */
  memories: Record<string, number>;
}

export interface LocomoReport {
  /** What `--json` writes. */
  figures: { mneme: EvaluationResult; baseline: EvaluationResult };
  conversations: ConversationInfo[];
  /** Of the evidence turns mneme found in its top 10, the share credited through each memory category. */
  foundThrough: Record<string, number>;
  settings: { embedder: string; chat: string };
}

const quiet = { warn: () => {}, info: () => {} };

/**
 * Evaluates mneme on LoCoMo conversations beside plain FTS5 over the raw turns. For each
 * conversation: a fresh database; every turn ingested as a user message of the conversation's
 * channel, sent by its speaker (a user with that display name), at the session's date plus a minute
 * per turn, an image's caption appended as text; extraction awaited until idle, then one maintenance
 * cycle; then each question recalled (topK 20) by the evaluation viewer (see `recallAsEvaluator`).
 * The clock stands one minute after the last turn, so the run is deterministic.
 */
export async function runLocomo(options: LocomoOptions): Promise<LocomoReport> {
  const all = loadLocomo(options.dataPath);
  const wanted = options.conversations ? new Set(options.conversations) : null;
  const conversations = wanted ? all.filter((conversation) => wanted.has(conversation.sampleId)) : all;
  const missing = wanted ? [...wanted].filter((id) => !all.some((conversation) => conversation.sampleId === id)) : [];
  if (missing.length > 0) {
    throw new Error(
      `no conversation ${missing.join(', ')} in ${options.dataPath}; it has ${all.map((conversation) => conversation.sampleId).join(', ')}`,
    );
  }

  const ours: QuestionOutcome[] = [];
  const theirs: QuestionOutcome[] = [];
  const infos: ConversationInfo[] = [];
  const credited = new Map<string, number>();
  for (const conversation of conversations) {
    const baseline = createTurnSearch(conversation);
    for (const question of conversation.questions) {
      theirs.push({
        category: question.category,
        evidence: question.evidence,
        retrieved: baseline.search(question.question, RETRIEVED),
      });
    }
    baseline.close();

    const { outcomes, info } = await evaluateConversation(conversation, options, credited);
    ours.push(...outcomes);
    infos.push(info);
  }
  const totalCredited = [...credited.values()].reduce((total, count) => total + count, 0);
  return {
    figures: { mneme: evaluate(ours), baseline: evaluate(theirs) },
    conversations: infos,
    foundThrough: Object.fromEntries(
      [...credited.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([category, count]) => [category, Math.round((count / Math.max(1, totalCredited)) * 1000) / 1000]),
    ),
    settings: { embedder: settingName(options.embedder), chat: settingName(options.chat) },
  };
}

function settingName(setting: EmbeddingModel | ChatModel | string | undefined): string {
  if (setting === undefined) return 'none';
  if (typeof setting === 'string') return setting;
  return 'modelId' in setting ? setting.modelId : 'custom';
}

/** A user id for a speaker's name: lower case, runs of other characters as `-`. */
export function speakerId(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, '-')
      .replace(/^-|-$/g, '') || 'speaker'
  );
}

/** The text a turn is ingested as: its text, and the caption of a shared image. */
export function turnContent(turn: { text: string; caption: string | null }): string {
  const text = turn.text.trim();
  if (!turn.caption) return text;
  return `${text}${text.length > 0 ? ' ' : ''}[shared an image: ${turn.caption}]`;
}

async function evaluateConversation(
  conversation: LocomoConversation,
  options: LocomoOptions,
  credited: Map<string, number>,
): Promise<{ outcomes: QuestionOutcome[]; info: ConversationInfo }> {
  const path = join(options.directory, `${speakerId(conversation.sampleId)}.db`);
  removeDatabase(path);
  const lastTurn = conversation.turns.at(-1)?.at ?? 0;
  const mneme = await createMneme({
    path,
    embedder: options.embedder ?? 'none',
    chat: options.chat ?? 'none',
    ...(options.providers ? { providers: options.providers } : {}),
    backfill: false,
    clock: { now: () => lastTurn + 60_000 },
    logger: quiet,
  });
  try {
    const diaIdOfMessage = new Map<number, string>();
    const label = `${conversation.sampleId}:`;
    const ingestBar = options.progress(`${label} ingesting turns`, conversation.turns.length);
    for (const [index, turn] of conversation.turns.entries()) {
      const result = await mneme.ingest({
        channelId: conversation.sampleId,
        sender: speakerId(turn.speaker),
        senderName: turn.speaker,
        role: 'user',
        content: turnContent(turn),
        createdAt: turn.at,
      });
      for (const message of result.messages) diaIdOfMessage.set(message.id, turn.diaId);
      ingestBar.update(index + 1);
    }
    ingestBar.finish();
    await mneme.whenIdle();
    await mneme.maintain();

    const stats = await mneme.stats();
    const viewers = conversation.speakers.map(
      (speaker): Viewer => ({ userId: speakerId(speaker), channelId: conversation.sampleId }),
    );
    const outcomes: QuestionOutcome[] = [];
    const questionBar = options.progress(`${label} asking questions`, conversation.questions.length);
    for (const [index, question] of conversation.questions.entries()) {
      const memories = await recallAsEvaluator(mneme, question.question, viewers);
      const retrieved: RetrievedItem[] = memories.map((memory) => ({
        diaIds: memory.sourceMessageIds.flatMap((id) => diaIdOfMessage.get(id) ?? []),
        words: countWords(memory.content),
      }));
      const outcome: QuestionOutcome = { category: question.category, evidence: question.evidence, retrieved };
      outcomes.push(outcome);
      creditFound(outcome, memories, credited);
      questionBar.update(index + 1);
    }
    questionBar.finish();
    return {
      outcomes,
      info: {
        sampleId: conversation.sampleId,
        turns: conversation.turns.length,
        questions: conversation.questions.length,
        skippedQuestions: conversation.skippedQuestions,
        memories: stats.byCategory,
      },
    };
  } finally {
    await mneme.close();
    removeDatabase(path);
  }
}

/**
 * The evaluation viewer: it may see the conversation's room memories and both speakers' personal
 * memories (and global ones). A mneme viewer carries one user id, so the question is recalled once
 * as each speaker in the conversation's channel (topK 20 each); the two lists are merged by memory,
 * keeping its higher score, direct hits ordered by score, then linked (`graph`) hits by score, as
 * one recall orders them; the first 20 are scored.
 */
export async function recallAsEvaluator(mneme: Mneme, query: string, viewers: readonly Viewer[]): Promise<Memory[]> {
  const best = new Map<number, { memory: Memory; score: number; graph: boolean }>();
  for (const viewer of viewers) {
    const result = await mneme.recall({ query, viewer, topK: RETRIEVED });
    for (const hit of result.hits) {
      const graph = hit.match === 'graph';
      const known = best.get(hit.memory.id);
      if (!known || (known.graph && !graph) || (known.graph === graph && hit.score > known.score)) {
        best.set(hit.memory.id, { memory: hit.memory, score: hit.score, graph });
      }
    }
  }
  return [...best.values()]
    .sort((a, b) => Number(a.graph) - Number(b.graph) || b.score - a.score || a.memory.id - b.memory.id)
    .slice(0, RETRIEVED)
    .map((entry) => entry.memory);
}

/** Counts, per memory category, the evidence turns first found in the top 10 through a memory of it. */
function creditFound(outcome: QuestionOutcome, memories: readonly Memory[], credited: Map<string, number>): void {
  const wanted = new Set(outcome.evidence);
  const seen = new Set<string>();
  outcome.retrieved.slice(0, 10).forEach((item, index) => {
    for (const id of item.diaIds) {
      if (!wanted.has(id) || seen.has(id)) continue;
      seen.add(id);
      const category = memories[index]?.category ?? 'unknown';
      credited.set(category, (credited.get(category) ?? 0) + 1);
    }
  });
}

function removeDatabase(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
}
