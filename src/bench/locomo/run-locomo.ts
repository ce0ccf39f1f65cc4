import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ProgressBar } from '../../cli/progress-bar.js';
import { EPISODE_WINDOW_MS } from '../../core/maintenance/episodes-task.js';
import { maintenanceTasks } from '../../core/maintenance/maintenance-task.js';
import { DEFAULT_PRESET, presetNames } from '../../core/presets.js';
import type { ChatModel, EmbeddingModel, MaintenanceTask, Memory, Mneme, Viewer } from '../../index.js';
import { createMneme, defaultMaintenanceIntervals, ErrorCode, MnemeError, mergeRecalls } from '../../index.js';
import { createFixedClock } from '../../testing.js';
import { type LocomoConversation, type LocomoQuestion, type LocomoTurn, loadLocomo } from './locomo-dataset.js';
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
  progress: (label: string, total: number) => Pick<ProgressBar, 'update' | 'finish'>;
  /** mneme's embedding model: `'none'` (offline, the default) or any `createMneme` setting or model. */
  embedder?: EmbeddingModel | string;
  /** mneme's chat model: `'none'` (offline, the default) or any `createMneme` setting or model. */
  chat?: ChatModel | string;
  /** Where the providers named by `embedder` and `chat` are. */
  providers?: Parameters<typeof createMneme>[0]['providers'];
  /** The preset each conversation's database is created under (`mneme` by default). */
  preset?: string;
  /** `static` (the default): ingest everything, then ask. `live`: replay each conversation on its own clock (`replayLive`). */
  mode?: LocomoMode;
  /** Live mode: ask the questions this many days after the last session (0 by default). */
  askAfterDays?: number;
  /**
   * Scores only the memories whose calibrated relevance is at least this (0..1), as `context` keeps those
   * of `context.minRelevance`: what the block would carry. 0 (the default): every hit, as `recall` returns them.
   */
  minRelevance?: number;
  /** Where each conversation's database is: a SQLite file (the default), or PGlite in memory (PostgreSQL's full text and pgvector). */
  store?: 'sqlite' | 'pglite';
  /** Live mode: how maintenance runs between and after sessions (`compressed` by default; see `LiveMaintenance`). */
  liveMaintenance?: LiveMaintenance;
}

export type LocomoMode = 'static' | 'live';

/** Milliseconds in a day. */
const DAY_MS = 24 * 60 * 60 * 1000;

/** The longest `askAfterDays` accepted: 100 years. */
export const MAX_ASK_AFTER_DAYS = 36_500;

/** What `--json` writes: mneme and the baseline, the mode and preset they ran under. */
export interface LocomoFigures {
  mode: LocomoMode;
  preset: string;
  /** Live mode only: days between the end of the last session and the questions. */
  askAfterDays?: number;
  /** With `--min-relevance`: the calibrated relevance a hit needed to be scored. */
  minRelevance?: number;
  /**
   * `decayedShare`: of every memory the run created (active or archived, all conversations pooled),
   * the share that is archived at question time by decay (see `countDecayed`).
   */
  mneme: EvaluationResult & { decayedShare: number };
  baseline: EvaluationResult;
}

/** The most memories a question is scored on (the largest cut-off). */
export const RETRIEVED = 20;

/** What one conversation looked like in mneme after ingest, extraction and maintenance. */
export interface ConversationInfo {
  sampleId: string;
  turns: number;
  questions: number;
  skippedQuestions: number;
  /** Active memories by category, at question time. */
  memories: Record<string, number>;
  /** Every memory the run created in this conversation's database, active or archived. */
  createdMemories: number;
  /** Of those, the memories archived by decay at question time. */
  decayedMemories: number;
}

/**
 * One question as mneme answered it, for reading the misses (`--questions <file>`): where each evidence
 * turn first appears in the scored top 20 (1-based, null when it does not), and the top 10 as memory id,
 * category, the dia ids it cites and its words. Not part of the figures.
 */
export interface QuestionDetail {
  sampleId: string;
  category: LocomoQuestion['category'];
  question: string;
  evidence: Array<{ diaId: string; rank: number | null }>;
  top: Array<{ id: number; category: string; diaIds: string[]; words: number }>;
}

export interface LocomoReport {
  /** What `--json` writes. */
  figures: LocomoFigures;
  /** Every scored question of mneme's run, in the order asked (see `QuestionDetail`). */
  questions: QuestionDetail[];
  conversations: ConversationInfo[];
  /** Of the evidence turns mneme found in its top 10, the share credited through each memory category. */
  foundThrough: Record<string, number>;
  settings: { embedder: string; chat: string };
}

const quiet = { warn: () => {}, info: () => {} };

/**
 * Evaluates mneme on LoCoMo conversations beside plain FTS5 over the raw turns. For each
 * conversation: a fresh database under the preset; every turn ingested as a user message of the
 * conversation's channel, sent by its speaker (a user with that display name), at the session's date
 * plus a minute per turn, an image's caption appended as text. Static mode: extraction awaited until
 * idle, then one maintenance cycle, the clock standing one minute after the last turn throughout.
 * Live mode: the conversation replayed on its own clock (`replayLive`). Then each question recalled
 * (topK 20) by the evaluation viewer (see `recallAsEvaluator`). The clock is fixed at every step, so
 * the run is deterministic.
 */
export async function runLocomo(options: LocomoOptions): Promise<LocomoReport> {
  const mode = options.mode ?? 'static';
  const preset = options.preset ?? DEFAULT_PRESET;
  if (!(presetNames as readonly string[]).includes(preset)) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `--preset must be one of ${presetNames.join(', ')}, not ${JSON.stringify(preset)}`,
    );
  }
  const askAfterDays = options.askAfterDays ?? 0;
  if (!(Number.isFinite(askAfterDays) && askAfterDays >= 0 && askAfterDays <= MAX_ASK_AFTER_DAYS)) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `--ask-after must be a number of days from 0 to ${MAX_ASK_AFTER_DAYS}, e.g. 90`,
    );
  }
  const minRelevance = options.minRelevance ?? 0;
  if (!(minRelevance >= 0 && minRelevance <= 1)) {
    throw new MnemeError(ErrorCode.InvalidInput, '--min-relevance must be a number from 0 to 1, e.g. 0.1');
  }
  if (mode === 'static' && options.askAfterDays !== undefined) {
    throw new MnemeError(ErrorCode.InvalidInput, '--ask-after needs --live: a static run asks with no time passed');
  }
  const all = loadLocomo(options.dataPath);
  const wanted = options.conversations ? new Set(options.conversations) : null;
  const conversations = wanted ? all.filter((conversation) => wanted.has(conversation.sampleId)) : all;
  const missing = wanted ? [...wanted].filter((id) => !all.some((conversation) => conversation.sampleId === id)) : [];
  if (missing.length > 0) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `no conversation ${missing.join(', ')} in ${options.dataPath}; it has ${all.map((conversation) => conversation.sampleId).join(', ')}`,
    );
  }

  const ours: QuestionOutcome[] = [];
  const details: QuestionDetail[] = [];
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

    const { outcomes, info, questions } = await evaluateConversation(
      conversation,
      options,
      { mode, preset, askAfterDays, minRelevance },
      credited,
    );
    ours.push(...outcomes);
    details.push(...questions);
    infos.push(info);
  }
  const totalCredited = [...credited.values()].reduce((total, count) => total + count, 0);
  const created = infos.reduce((total, info) => total + info.createdMemories, 0);
  const decayed = infos.reduce((total, info) => total + info.decayedMemories, 0);
  return {
    figures: {
      mode,
      preset,
      ...(mode === 'live' ? { askAfterDays } : {}),
      ...(minRelevance > 0 ? { minRelevance } : {}),
      mneme: { ...evaluate(ours), decayedShare: created === 0 ? 0 : Math.round((decayed / created) * 10_000) / 10_000 },
      baseline: evaluate(theirs),
    },
    questions: details,
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

interface RunMode {
  mode: LocomoMode;
  preset: string;
  askAfterDays: number;
  minRelevance: number;
}

async function evaluateConversation(
  conversation: LocomoConversation,
  options: LocomoOptions,
  run: RunMode,
  credited: Map<string, number>,
): Promise<{ outcomes: QuestionOutcome[]; info: ConversationInfo; questions: QuestionDetail[] }> {
  const path =
    options.store === 'pglite' ? 'pglite:memory:' : join(options.directory, `${speakerId(conversation.sampleId)}.db`);
  removeDatabase(path);
  const lastTurn = conversation.turns.at(-1)?.at ?? 0;
  const firstTurn = conversation.turns[0]?.at ?? 0;
  const clock = createFixedClock(run.mode === 'live' ? firstTurn : lastTurn + 60_000);
  const mneme = await createMneme({
    path,
    embedder: options.embedder ?? 'none',
    chat: options.chat ?? 'none',
    ...(options.providers ? { providers: options.providers } : {}),
    backfill: false,
    clock: { now: clock.now },
    logger: quiet,
    preset: run.preset,
  });
  try {
    const diaIdOfMessage = new Map<number, string>();
    const label = `${conversation.sampleId}:`;
    const ingestBar = options.progress(`${label} ingesting turns`, conversation.turns.length);
    let ingested = 0;
    const ingestTurn = async (turn: LocomoTurn) => {
      const result = await mneme.ingest({
        channelId: conversation.sampleId,
        sender: speakerId(turn.speaker),
        senderName: turn.speaker,
        role: 'user',
        content: turnContent(turn),
        createdAt: turn.at,
      });
      for (const message of result.messages) diaIdOfMessage.set(message.id, turn.diaId);
      ingestBar.update(++ingested);
    };
    if (run.mode === 'live') {
      await replayLive(mneme, clock, conversation.turns, ingestTurn, {
        askAfterDays: run.askAfterDays,
        maintenance: options.liveMaintenance ?? 'compressed',
      });
    } else {
      for (const turn of conversation.turns) await ingestTurn(turn);
      await mneme.whenIdle();
      await mneme.maintain();
    }
    ingestBar.finish();

    const stats = await mneme.stats();
    const decayedMemories = await countDecayed(mneme);
    const viewers = conversation.speakers.map(
      (speaker): Viewer => ({ userId: speakerId(speaker), channelId: conversation.sampleId }),
    );
    const outcomes: QuestionOutcome[] = [];
    const questions: QuestionDetail[] = [];
    const questionBar = options.progress(`${label} asking questions`, conversation.questions.length);
    for (const [index, question] of conversation.questions.entries()) {
      const hits = await recallAsEvaluator(mneme, question.question, viewers);
      // Under a threshold, a hit below it keeps its place but carries nothing: the top k hold fewer memories, as
      // `context` keeps fewer of its top k.
      const memories = hits.map((hit) => (hit.calibratedRelevance >= run.minRelevance ? hit.memory : null));
      const retrieved: RetrievedItem[] = memories.map((memory) => ({
        diaIds: memory?.sourceMessageIds.flatMap((id) => diaIdOfMessage.get(id) ?? []) ?? [],
        words: memory ? countWords(memory.content) : 0,
      }));
      const outcome: QuestionOutcome = { category: question.category, evidence: question.evidence, retrieved };
      outcomes.push(outcome);
      questions.push(questionDetail(conversation.sampleId, question, retrieved, memories));
      creditFound(outcome, memories, credited);
      questionBar.update(index + 1);
    }
    questionBar.finish();
    return {
      outcomes,
      questions,
      info: {
        sampleId: conversation.sampleId,
        turns: conversation.turns.length,
        questions: conversation.questions.length,
        skippedQuestions: conversation.skippedQuestions,
        memories: stats.byCategory,
        createdMemories: stats.total,
        decayedMemories,
      },
    };
  } finally {
    await mneme.close();
    removeDatabase(path);
  }
}

/** A clock the replay moves: `createFixedClock`'s. */
type ReplayClock = ReturnType<typeof createFixedClock>;

/**
 * How long after a session's last turn its closing maintenance runs: the length of an episode window,
 * so every window of the session (each starts at a message of it) is closed and becomes an episode.
 * (Half an hour would leave a session shorter than 30 minutes with its window still open.)
 */
export const SESSION_CLOSE_MS = EPISODE_WINDOW_MS;

/**
 * How maintenance runs in a live replay. `compressed` (what `mneme eval locomo --live` does): one
 * decay run at each session's start and every task once at its close (see `replayLive`). `scheduled`:
 * `mneme serve`'s scheduler simulated tick by tick (every 30 minutes of conversation time from the
 * first turn, each task when its interval in `defaultMaintenanceIntervals` has passed), slower; it
 * is there to check that the compressed schedule measures the same thing.
 */
export type LiveMaintenance = 'compressed' | 'scheduled';

/** How often the simulated scheduler looks for due tasks: the shortest interval (30 minutes). */
const TICK_MS = Math.min(...Object.values(defaultMaintenanceIntervals));

/**
 * Replays a conversation as a deployment running `mneme serve` would have lived it, on a fixed clock
 * (deterministic). Each turn is ingested with the clock at its time (the session's date plus a minute
 * per turn), and extraction is awaited (`whenIdle`) before the next, so every memory carries the time
 * of the turn it came from, as in live use, and no background work ever reads a moving clock.
 *
 * Maintenance, `compressed` (the default), for each session in order:
 *
 * 1. From the second session on, with the clock at the session's first turn, decay runs once
 *    (`maintain({ tasks: ['decay'] })`): the daily decay runs of the gap since the previous session.
 * 2. The session's turns are ingested.
 * 3. With the clock `SESSION_CLOSE_MS` (an hour) past the last turn, or at the next session's start
 *    if that comes first, every task runs once (`maintain()`): episodes of the session's closed
 *    windows, consolidation and linking of its new memories, decay.
 *
 * Why one run per gap stands for the scheduler's runs (decay daily; episodes, consolidation and
 * linking every 30 minutes): decay is computed exactly from the time since a memory's last retrieval
 * (or creation), and nothing retrieves during a gap, so one run at the gap's end archives (and, for
 * importance steps, downgrades) exactly what daily runs would have by then, had one fallen at the
 * session's start (a scheduler's daily run falls anywhere in the day before it). Episodes,
 * consolidation and linking work on the messages and memories newer than their watermarks; a gap
 * brings none, so their runs in it find nothing new (the link task's cleanup of links to archived
 * memories waits for the session's close, and nothing recalls before then). Within a session (under
 * an hour in LoCoMo) the scheduler would run them once or twice as turns arrive; here they run at
 * its close. The `scheduled` replay measures the difference.
 *
 * The questions come at the last session's close, after one more `maintain()` (all tasks); with
 * `askAfterDays`, that many days later, after a `maintain()` at that time (the memories idle that long).
 */
export async function replayLive(
  mneme: Mneme,
  clock: ReplayClock,
  turns: readonly LocomoTurn[],
  ingestTurn: (turn: LocomoTurn) => Promise<void>,
  options: { askAfterDays?: number; maintenance?: LiveMaintenance } = {},
): Promise<void> {
  const scheduled = options.maintenance === 'scheduled';
  const sessions = groupBySession(turns);
  const lastRun = new Map<MaintenanceTask, number>();
  let nextTick = turns[0]?.at ?? clock.now();
  /** Moves the clock forward to `time`; when `scheduled`, runs the scheduler's ticks on the way. */
  const passTo = async (time: number) => {
    while (scheduled && nextTick <= time) {
      clock.set(Math.max(clock.now(), nextTick));
      const due = maintenanceTasks.filter((task) => {
        const previous = lastRun.get(task);
        return previous === undefined || nextTick - previous >= defaultMaintenanceIntervals[task];
      });
      for (const task of due) lastRun.set(task, nextTick);
      if (due.length > 0) await mneme.maintain({ tasks: due });
      nextTick += TICK_MS;
    }
    clock.set(Math.max(clock.now(), time));
  };

  for (const [index, session] of sessions.entries()) {
    const first = session[0]?.at ?? clock.now();
    const last = session.at(-1)?.at ?? first;
    if (index > 0) {
      await passTo(first);
      if (!scheduled) await mneme.maintain({ tasks: ['decay'] });
    }
    for (const turn of session) {
      await passTo(turn.at);
      await ingestTurn(turn);
      await mneme.whenIdle();
    }
    const next = sessions[index + 1]?.[0]?.at ?? Number.POSITIVE_INFINITY;
    await passTo(Math.min(last + SESSION_CLOSE_MS, next));
    if (!scheduled || next === Number.POSITIVE_INFINITY) await mneme.maintain();
  }
  const askAfterDays = options.askAfterDays ?? 0;
  if (askAfterDays > 0) {
    await passTo(clock.now() + askAfterDays * DAY_MS);
    await mneme.maintain();
  }
}

/** The turns of each session, sessions in order (the turns come in that order). */
function groupBySession(turns: readonly LocomoTurn[]): LocomoTurn[][] {
  const sessions: LocomoTurn[][] = [];
  for (const turn of turns) {
    const current = sessions.at(-1);
    if (current && current[0]?.session === turn.session) current.push(turn);
    else sessions.push([turn]);
  }
  return sessions;
}

/** Memories a page of `list` reads. */
const LIST_PAGE = 500;

/**
 * How many memories are archived by decay now: those `list({ archived: 'only' })` gives whose latest
 * `archive` version (the one that archived them) has a reason starting with `decay:`, the reason
 * every decay policy archives with (salience's "removed below 0.1" included). Memories archived by
 * consolidation (merged), by `forget` or otherwise are not counted, nor one decay archived and
 * something restored since.
 */
export async function countDecayed(mneme: Mneme): Promise<number> {
  let decayed = 0;
  for (let offset = 0; ; offset += LIST_PAGE) {
    const page = await mneme.list({ archived: 'only', limit: LIST_PAGE, offset });
    for (const memory of page.memories) {
      const archive = (await mneme.history(memory.id)).filter((version) => version.action === 'archive').at(-1);
      if (archive?.reason?.startsWith('decay:')) decayed++;
    }
    if (page.memories.length < LIST_PAGE) return decayed;
  }
}

/**
 * The evaluation viewer: it may see the conversation's room memories and both speakers' personal
 * memories (and global ones). A mneme viewer carries one user id, so the question is recalled once
 * as each speaker in the conversation's channel (topK 20 each), and the recalls are merged as an
 * application answering for both would merge them, with `mergeRecalls`: one ranking under the rules of
 * one recall (a turn and the fact standing in for it are not both kept); the first 20 are scored, each
 * with its calibrated relevance.
 */
export async function recallAsEvaluator(
  mneme: Mneme,
  query: string,
  viewers: readonly Viewer[],
): Promise<Array<{ memory: Memory; calibratedRelevance: number }>> {
  const results = [];
  for (const viewer of viewers) results.push(await mneme.recall({ query, viewer, topK: RETRIEVED }));
  return mergeRecalls(results, RETRIEVED)
    .slice(0, RETRIEVED)
    .map(({ memory, calibratedRelevance }) => ({ memory, calibratedRelevance }));
}

/** A question's `QuestionDetail`: each evidence turn's first rank among the scored items, and the top 10. */
export function questionDetail(
  sampleId: string,
  question: LocomoQuestion,
  retrieved: readonly RetrievedItem[],
  memories: ReadonlyArray<Memory | null>,
): QuestionDetail {
  const rankOf = (diaId: string) => {
    const index = retrieved.findIndex((item) => item.diaIds.includes(diaId));
    return index < 0 ? null : index + 1;
  };
  return {
    sampleId,
    category: question.category,
    question: question.question,
    evidence: question.evidence.map((diaId) => ({ diaId, rank: rankOf(diaId) })),
    top: retrieved.slice(0, 10).flatMap((item, index) => {
      const memory = memories[index];
      return memory ? [{ id: memory.id, category: memory.category, diaIds: [...item.diaIds], words: item.words }] : [];
    }),
  };
}

/** Counts, per memory category, the evidence turns first found in the top 10 through a memory of it. */
function creditFound(
  outcome: QuestionOutcome,
  memories: ReadonlyArray<Memory | null>,
  credited: Map<string, number>,
): void {
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
