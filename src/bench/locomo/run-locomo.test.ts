import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMneme, type Memory, type Mneme } from '../../index.js';
import { createFixedClock } from '../../testing.js';
import { type LocomoTurn, loadLocomo } from './locomo-dataset.js';
import {
  countDecayed,
  type LocomoOptions,
  type LocomoReport,
  replayLive,
  runLocomo,
  SESSION_CLOSE_MS,
  speakerId,
  turnContent,
} from './run-locomo.js';

/** Two sessions of six turns, 150 days apart: 2 January 2023 and 1 June 2023. */
const liveFile = new URL('../../../test/fixtures/locomo-live.json', import.meta.url).pathname;
const [conversation] = loadLocomo(liveFile);
if (!conversation) throw new Error('the live fixture has no conversation');
const sessionOne = conversation.turns.filter((turn) => turn.session === 1);
const sessionTwo = conversation.turns.filter((turn) => turn.session === 2);
const sessionTwoStart = sessionTwo[0]?.at ?? 0;
const DAY_MS = 24 * 60 * 60 * 1000;

const folder = mkdtempSync(join(tmpdir(), 'mneme-locomo-live-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const quietProgress = () => ({ update: () => {}, finish: () => {} });
const run = (options: Partial<LocomoOptions> = {}): Promise<LocomoReport> =>
  runLocomo({ dataPath: liveFile, directory: folder, progress: quietProgress, ...options });

describe('a live replay', () => {
  let mneme: Mneme | null = null;
  afterEach(async () => {
    await mneme?.close();
    mneme = null;
  });

  /** Replays the fixture on an in-memory database; returns the engine and the turn of each message id. */
  async function replay(askAfterDays = 0) {
    const clock = createFixedClock(conversation?.turns[0]?.at ?? 0);
    const engine = await createMneme({ path: ':memory:', clock, logger: { warn: () => {}, info: () => {} } });
    mneme = engine;
    const turnOf = new Map<number, LocomoTurn>();
    await replayLive(
      engine,
      clock,
      conversation?.turns ?? [],
      async (turn) => {
        const result = await engine.ingest({
          channelId: 'live-1',
          sender: speakerId(turn.speaker),
          senderName: turn.speaker,
          role: 'user',
          content: turnContent(turn),
          createdAt: turn.at,
        });
        for (const message of result.messages) turnOf.set(message.id, turn);
      },
      { askAfterDays },
    );
    const all = await engine.list({ archived: 'include', limit: 500 });
    return { engine, clock, turnOf, memories: all.memories };
  }

  const sessionOf = (memory: Memory, turnOf: Map<number, LocomoTurn>) =>
    new Set(memory.sourceMessageIds.map((id) => turnOf.get(id)?.session));

  it('ingests each session at its own time: a turn memory carries the time of its turn', async () => {
    const { memories, turnOf } = await replay();
    const exchanges = memories.filter((memory) => memory.source === 'exchange');
    expect(exchanges.length).toBeGreaterThanOrEqual(10);
    for (const memory of exchanges) {
      const [id] = memory.sourceMessageIds;
      const turn = id === undefined ? undefined : turnOf.get(id);
      expect(memory.createdAt).toBe(new Date(turn?.at ?? 0).toISOString());
    }
    expect(exchanges.some((memory) => Date.parse(memory.createdAt) >= sessionTwoStart)).toBe(true);
  });

  it('closes each session with episodes of its turns, written an hour after its last turn', async () => {
    const { memories, turnOf } = await replay();
    const episodes = memories.filter((memory) => memory.category === 'episode');
    expect(episodes.map((memory) => [...sessionOf(memory, turnOf)])).toEqual([[2], [1]]);
    const closeOfOne = (sessionOne.at(-1)?.at ?? 0) + SESSION_CLOSE_MS;
    expect(episodes.map((memory) => memory.createdAt)).toContain(new Date(closeOfOne).toISOString());
  });

  it("archives the first session's memories by decay at the second session's start, and counts them", async () => {
    const { engine, memories, turnOf } = await replay();
    const fromOne = memories.filter((memory) => Date.parse(memory.createdAt) < sessionTwoStart);
    const fromTwo = memories.filter((memory) => Date.parse(memory.createdAt) >= sessionTwoStart);
    expect(fromOne.length).toBeGreaterThan(0);
    expect(fromTwo.length).toBeGreaterThan(0);
    for (const memory of fromOne) {
      expect([...sessionOf(memory, turnOf)]).toEqual([1]);
      expect(memory.archivedAt).toBe(new Date(sessionTwoStart).toISOString());
      const archive = (await engine.history(memory.id)).find((version) => version.action === 'archive');
      expect(archive?.reason).toMatch(/^decay: Ebbinghaus/);
    }
    for (const memory of fromTwo) expect(memory.archivedAt).toBeNull();
    expect(await countDecayed(engine)).toBe(fromOne.length);
  });

  it('asked 90 days later, the second session has decayed too', async () => {
    const { engine, clock, memories } = await replay(90);
    expect(clock.now()).toBe((sessionTwo.at(-1)?.at ?? 0) + SESSION_CLOSE_MS + 90 * DAY_MS);
    expect(memories.every((memory) => memory.archivedAt !== null)).toBe(true);
    expect(await countDecayed(engine)).toBe(memories.length);
  });

  it('does not count memories archived otherwise than by decay', async () => {
    const { engine, memories } = await replay();
    const active = memories.find((memory) => memory.archivedAt === null);
    if (!active) throw new Error('no active memory');
    const before = await countDecayed(engine);
    await engine.forget(active.id);
    expect(await countDecayed(engine)).toBe(before);
  });
});

describe('runLocomo modes', () => {
  it('live: the share of the memories created that decay archived, pooled, and the figures of what is left', async () => {
    const report = await run({ mode: 'live' });
    const [info] = report.conversations;
    expect(report.figures.mode).toBe('live');
    expect(report.figures.preset).toBe('mneme');
    expect(report.figures.askAfterDays).toBe(0);
    expect(info?.decayedMemories).toBeGreaterThan(0);
    expect(report.figures.mneme.decayedShare).toBe(
      Math.round(((info?.decayedMemories ?? 0) / (info?.createdMemories ?? 1)) * 10_000) / 10_000,
    );
    // The puppy and the cello (session 1) faded and are still found (ADR 9), as are Lisbon and the
    // driving test (session 2).
    expect(report.figures.mneme.overall.recallAt['20']).toBe(1);
    expect(report.figures.baseline.overall.recallAt['20']).toBe(1);
  });

  it('live with askAfterDays: more has decayed', async () => {
    const now = await run({ mode: 'live' });
    const later = await run({ mode: 'live', askAfterDays: 90 });
    expect(later.figures.askAfterDays).toBe(90);
    expect(later.figures.mneme.decayedShare).toBeGreaterThan(now.figures.mneme.decayedShare);
    expect(later.figures.mneme.decayedShare).toBe(1);
  });

  it('static: nothing decays, and the report says static without a waiting time', async () => {
    const report = await run();
    expect(report.figures.mode).toBe('static');
    expect(report.figures.mneme.decayedShare).toBe(0);
    expect('askAfterDays' in report.figures).toBe(false);
    expect(report.figures.mneme.overall.recallAt['20']).toBe(1);
  });

  it('details each question: the rank of each evidence turn among the scored hits agrees with the figures', async () => {
    const report = await run();
    const asked = conversation?.questions ?? [];
    expect(report.questions.map((detail) => detail.question)).toEqual(asked.map((question) => question.question));
    for (const detail of report.questions) {
      expect(detail.sampleId).toBe(conversation?.sampleId);
      expect(detail.top.length).toBeLessThanOrEqual(10);
      for (const { rank, diaId } of detail.evidence) {
        if (rank === null) continue;
        expect(rank).toBeGreaterThanOrEqual(1);
        // The item at that rank cites the turn; when it is in the top 10, the detail lists it there.
        if (rank <= 10) expect(detail.top[rank - 1]?.diaIds).toContain(diaId);
      }
    }
    const scored = report.questions.filter((detail) => detail.category !== 5);
    const recallAt = (k: number) =>
      scored.reduce(
        (total, detail) =>
          total + detail.evidence.filter(({ rank }) => rank !== null && rank <= k).length / detail.evidence.length,
        0,
      ) / scored.length;
    for (const k of [1, 5, 10, 20] as const) {
      expect(recallAt(k)).toBeCloseTo(report.figures.mneme.overall.recallAt[`${k}`], 4);
    }
  });

  it('runs each database under the preset asked for', async () => {
    const report = await run({ mode: 'live', preset: 'salience' });
    expect(report.figures.preset).toBe('salience');
    expect(report.figures.mneme.decayedShare).toBeGreaterThan(0);
  });

  it('the compressed maintenance measures what the scheduler does tick by tick', async () => {
    // 49 days apart (not 150) to keep the ticks few: still past the 46.5 days Ebbinghaus archives at.
    const json = JSON.parse(readFileSync(liveFile, 'utf8'));
    json[0].conversation.session_2_date_time = '4:30 pm on 20 February, 2023';
    const dataPath = join(folder, 'locomo-live-49-days.json');
    writeFileSync(dataPath, JSON.stringify(json));
    const compressed = await run({ dataPath, mode: 'live' });
    const scheduled = await run({ dataPath, mode: 'live', liveMaintenance: 'scheduled' });
    expect(compressed.figures.mneme.decayedShare).toBeGreaterThan(0);
    expect(scheduled.figures).toEqual(compressed.figures);
    expect(scheduled.conversations).toEqual(compressed.conversations);
    // A thousand maintenance ticks: seconds alone, much longer on a loaded machine.
  }, 180_000);

  it('refuses askAfterDays without live mode, a negative one and an unknown preset', async () => {
    await expect(run({ askAfterDays: 3 })).rejects.toThrow('--ask-after needs --live');
    await expect(run({ mode: 'live', askAfterDays: -1 })).rejects.toThrow('--ask-after must be a number of days');
    await expect(run({ preset: 'nope' })).rejects.toThrow('--preset must be one of mneme');
  });
});
