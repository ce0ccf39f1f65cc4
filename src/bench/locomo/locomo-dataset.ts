import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ErrorCode, errorMessage, MnemeError } from '../../core/errors.js';

/** LoCoMo's question categories (from the benchmark's evaluation code); 5 is scored apart. */
export const locomoCategories = {
  1: 'multi-hop',
  2: 'temporal',
  3: 'open-domain',
  4: 'single-hop',
  5: 'adversarial',
} as const;

export type LocomoCategory = keyof typeof locomoCategories;

/** One turn of a conversation, with the time it is ingested at. */
export interface LocomoTurn {
  /** `D<session>:<turn>`, e.g. `D3:12`. */
  diaId: string;
  speaker: string;
  text: string;
  /** The caption of an image the speaker shared, or null. */
  caption: string | null;
  session: number;
  /** Epoch milliseconds: the session's date, plus one minute per turn before it in the session. */
  at: number;
}

export interface LocomoQuestion {
  question: string;
  category: LocomoCategory;
  /** The evidence turns that exist in the conversation, normalised, never empty. */
  evidence: string[];
}

export interface LocomoConversation {
  sampleId: string;
  speakers: [string, string];
  /** Every turn, sessions in order. */
  turns: LocomoTurn[];
  questions: LocomoQuestion[];
  /** Questions dropped because none of their evidence ids exists in the conversation. */
  skippedQuestions: number;
}

/** Minutes between two turns of one session (the data gives only the session's start). */
export const TURN_SPACING_MS = 60_000;

const TurnSchema = z.looseObject({
  speaker: z.string(),
  dia_id: z.string(),
  text: z.string(),
  blip_caption: z.string().optional(),
});

const SampleSchema = z.looseObject({
  sample_id: z.string(),
  conversation: z.record(z.string(), z.unknown()),
  qa: z.array(
    z.looseObject({
      question: z.string(),
      category: z.number().int().min(1).max(5),
      evidence: z.array(z.unknown()).default([]),
    }),
  ),
});

/** Reads a LoCoMo JSON file: a list of samples in the benchmark's own format. */
export function loadLocomo(path: string): LocomoConversation[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    // A missing file is NOT_FOUND (exit 3), as for `ingest` and `import`; one that is not JSON is bad input.
    const missing = (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
    throw new MnemeError(
      missing ? ErrorCode.NotFound : ErrorCode.InvalidInput,
      missing
        ? `cannot read the LoCoMo file ${path}: it does not exist; check --data`
        : `cannot read the LoCoMo file ${path}: ${errorMessage(error)}`,
      { cause: error },
    );
  }
  return parseLocomo(json);
}

/** The conversations of parsed LoCoMo JSON, with the data quirks of the README handled. */
export function parseLocomo(json: unknown): LocomoConversation[] {
  const samples = z.array(SampleSchema).safeParse(json);
  if (!samples.success) {
    const issue = samples.error.issues[0];
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `not a LoCoMo file: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'unexpected shape'}; expected a list of samples with sample_id, conversation and qa`,
    );
  }
  return samples.data.map(parseSample);
}

function parseSample(sample: z.output<typeof SampleSchema>): LocomoConversation {
  const conversation = sample.conversation;
  const speakers: [string, string] = [String(conversation.speaker_a ?? 'A'), String(conversation.speaker_b ?? 'B')];
  const sessions = Object.keys(conversation)
    .map((key) => /^session_(\d+)$/.exec(key))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => Number(match[1]))
    .sort((a, b) => a - b);

  const turns: LocomoTurn[] = [];
  let previous = Number.NEGATIVE_INFINITY;
  for (const session of sessions) {
    const parsedTurns = z.array(TurnSchema).safeParse(conversation[`session_${session}`]);
    if (!parsedTurns.success) {
      throw new MnemeError(ErrorCode.InvalidInput, `${sample.sample_id}: session_${session} is not a list of turns`);
    }
    const dateText = String(conversation[`session_${session}_date_time`] ?? '');
    const start = parseSessionDate(dateText);
    if (start === null) {
      throw new MnemeError(
        ErrorCode.InvalidInput,
        `${sample.sample_id}: cannot read the date of session ${session}: ${JSON.stringify(dateText)}`,
      );
    }
    parsedTurns.data.forEach((turn, index) => {
      // Times stay in order even if a session's date came before the previous session's end.
      const at = Math.max(start + index * TURN_SPACING_MS, previous + 1_000);
      previous = at;
      turns.push({
        diaId: normaliseDiaId(turn.dia_id),
        speaker: turn.speaker,
        text: turn.text,
        caption: turn.blip_caption?.trim() ? turn.blip_caption.trim() : null,
        session,
        at,
      });
    });
  }

  const known = new Set(turns.map((turn) => turn.diaId));
  const questions: LocomoQuestion[] = [];
  let skippedQuestions = 0;
  for (const qa of sample.qa) {
    const evidence = parseEvidence(qa.evidence, known);
    if (evidence.length === 0) {
      skippedQuestions++;
      continue;
    }
    questions.push({ question: qa.question, category: qa.category as LocomoCategory, evidence });
  }
  return { sampleId: sample.sample_id, speakers, turns, questions, skippedQuestions };
}

/**
 * The evidence ids of a question: each entry split on `;`, `,` and whitespace (`"D8:6; D9:17"` is
 * two ids), leading zeros stripped (`D30:05` is `D30:5`), ids not in the conversation dropped,
 * duplicates removed, order kept.
 */
export function parseEvidence(entries: readonly unknown[], known: ReadonlySet<string>): string[] {
  const ids = entries
    .flatMap((entry) => String(entry).split(/[;,\s]+/))
    .filter((part) => part.length > 0)
    .map(normaliseDiaId)
    .filter((id) => known.has(id));
  return [...new Set(ids)];
}

/** `D30:05` -> `D30:5`, `d3:012` -> `D3:12`; anything else is returned trimmed, as it is. */
export function normaliseDiaId(raw: string): string {
  const match = /^\s*D0*(\d+):0*(\d+)\s*$/i.exec(raw);
  return match ? `D${match[1]}:${match[2]}` : raw.trim();
}

const months = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];

/** `1:56 pm on 8 May, 2023` as epoch milliseconds (read as UTC), or null when it is not such a date. */
export function parseSessionDate(text: string): number | null {
  const match = /^\s*(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})\s*$/i.exec(text);
  if (!match) return null;
  const [, hourText, minuteText, half, dayText, monthText, yearText] = match;
  const month = months.indexOf((monthText ?? '').toLowerCase());
  if (month < 0) return null;
  const hour = (Number(hourText) % 12) + ((half ?? '').toLowerCase() === 'pm' ? 12 : 0);
  return Date.UTC(Number(yearText), month, Number(dayText), hour, Number(minuteText));
}
