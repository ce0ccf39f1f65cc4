import type { Message } from '../../storage/message-store.js';
import { embedDocuments } from '../embed-documents.js';
import type { EngineContext } from '../engine-context.js';
import { errorMessage, isMnemeError } from '../errors.js';
import { displayName } from '../ingest/display-name.js';
import {
  type EpisodeMessage,
  type EpisodeSummariser,
  type EpisodeSummary,
  EpisodeSummarySchema,
} from '../ports/episode-summariser.js';
import { ownerKey } from '../scope.js';
import { MAINTENANCE_ACTOR, type TaskReport } from './maintenance-task.js';

/** A channel gets episodes once at least this many messages came after its episode watermark. */
export const EPISODE_MIN_NEW_MESSAGES = 6;
/** Messages are grouped in windows of this length, each starting at its first message. */
export const EPISODE_WINDOW_MS = 60 * 60 * 1000;
/** A window of at least this many messages becomes one episode memory. */
export const EPISODE_MIN_WINDOW_MESSAGES = 4;
/** Messages read per page. */
const PAGE_SIZE = 500;

/** What one episodes run did. */
export interface EpisodesReport extends TaskReport {
  /** Channels that had enough new messages to look at. */
  channels: number;
  /** Messages the episode watermarks moved past. */
  messages: number;
  /** Episode memories written. */
  episodes: number;
}

/**
 * Writes episode memories, per channel, from the message log after the channel's episode
 * watermark: once 6 or more messages are new, they are grouped in 60-minute windows and each
 * closed window (its hour is over at `now`, or it starts more than an hour after `now`; a message an hour or more
 * before a window's start closes it as one after its hour does) of 4 or more messages becomes one `episode` memory in
 * the channel's room scope, with its source messages, valid from the window's last message. The
 * watermark moves past every closed window (in the transaction of the window's episode, if it has one);
 * the open one waits for the next run. A summariser failure leaves the watermark before its window.
 */
export async function runEpisodes(
  context: EngineContext,
  summariser: EpisodeSummariser,
  now: number,
): Promise<EpisodesReport> {
  const report: EpisodesReport = { channels: 0, messages: 0, episodes: 0, skipped: null };
  const speakers = new Map<string, string>();
  for (const channelId of await context.storage.messages.channelIds()) {
    const state = await context.storage.maintenanceState.get(channelId, 'episodes');
    const watermark = state?.watermark ?? 0;
    if ((await context.storage.messages.countAfter(channelId, watermark)) < EPISODE_MIN_NEW_MESSAGES) continue;
    report.channels++;
    const moved = await summariseChannel(context, summariser, channelId, watermark, now, speakers, report);
    report.messages += moved;
    await context.storage.maintenanceState.set(channelId, 'episodes', { lastRunAt: now });
  }
  return report;
}

/** Writes the episodes of one channel's closed windows; returns how many messages the watermark moved past. */
async function summariseChannel(
  context: EngineContext,
  summariser: EpisodeSummariser,
  channelId: string,
  watermark: number,
  now: number,
  speakers: Map<string, string>,
  report: EpisodesReport,
): Promise<number> {
  const { storage } = context;
  let settled = watermark;
  let moved = 0;
  let lastSeen = watermark;
  let seenSinceSettled = 0;
  let window: Message[] = [];
  let windowStart = 0;

  /** Closes the window that ends with `lastSeen`; false when its summary failed (stop there). */
  const close = async (): Promise<boolean> => {
    if (window.length >= EPISODE_MIN_WINDOW_MESSAGES) {
      const summary = await summarise(context, summariser, channelId, window, speakers);
      if (summary === null) return false;
      const [embedding = null] = await embedDocuments(context, [summary.summary]);
      const stored = await storage.memories
        .insert(
          [
            {
              content: summary.summary,
              category: 'episode',
              sector: 'episodic',
              scope: 'room',
              owner: ownerKey('room', { channelId }),
              userId: null,
              channelId,
              projectId: null,
              topicId: null,
              source: 'episode',
              importance: 0.5,
              pinned: false,
              sourceMessageIds: window.map((message) => message.id),
              sourceIds: [],
              embedding,
              validFrom: Math.max(...window.map((message) => Date.parse(message.createdAt))),
            },
          ],
          { at: now, actor: MAINTENANCE_ACTOR, reason: `episode of ${window.length} messages in ${channelId}` },
          // A purge while the window was summarised: its summary quotes what the purged user said. Stop
          // here, the watermark before the window: the next run summarises what is left of it.
          // The watermark moves past the window in the episode's transaction: a process killed after the
          // episode is stored has moved it too, and the next run does not write the episode again.
          { sourcesMustExist: true, state: { channelId, task: 'episodes', changes: { watermark: lastSeen } } },
        )
        .then(
          () => true,
          (error: unknown) => {
            if (isMnemeError(error, 'NOT_FOUND')) return false;
            throw error;
          },
        );
      if (!stored) return false;
      report.episodes++;
    } else {
      await storage.maintenanceState.set(channelId, 'episodes', { watermark: lastSeen });
    }
    settled = lastSeen;
    moved += seenSinceSettled;
    seenSinceSettled = 0;
    window = [];
    return true;
  };

  let cursor = watermark;
  for (;;) {
    const page = await storage.messages.listAfter(channelId, cursor, PAGE_SIZE);
    for (const message of page) {
      const time = Date.parse(message.createdAt);
      // A message an hour or more before the window's start closes it too: the window began with messages dated in
      // the future (stored while the clock ran fast, or sent so), and waiting for its hour would hold every later
      // message of the channel until then (attack 25, time).
      const outside = time >= windowStart + EPISODE_WINDOW_MS || time <= windowStart - EPISODE_WINDOW_MS;
      if (window.length > 0 && outside && !(await close())) return moved;
      lastSeen = message.id;
      seenSinceSettled++;
      if (message.role === 'system') continue;
      if (window.length === 0) windowStart = time;
      window.push(message);
    }
    if (page.length < PAGE_SIZE) break;
    cursor = page.at(-1)?.id ?? cursor;
  }
  // Open while its hour is not over, unless it starts more than an hour after `now`: dated in the future, it is closed
  // now rather than when the clock reaches it.
  const isOpen = window.length > 0 && windowStart + EPISODE_WINDOW_MS > now && windowStart - EPISODE_WINDOW_MS < now;
  if (!isOpen && lastSeen !== settled) await close();
  return moved;
}

async function summarise(
  context: EngineContext,
  summariser: EpisodeSummariser,
  channelId: string,
  window: readonly Message[],
  speakers: Map<string, string>,
): Promise<EpisodeSummary | null> {
  const messages: EpisodeMessage[] = [];
  for (const message of window) {
    let speaker = speakers.get(message.senderId);
    if (speaker === undefined) {
      speaker = await displayName(context, message.senderId);
      speakers.set(message.senderId, speaker);
    }
    messages.push({
      id: message.id,
      speaker,
      role: message.role === 'assistant' ? 'assistant' : 'user',
      content: message.content,
      createdAt: message.createdAt,
    });
  }
  try {
    const result = EpisodeSummarySchema.safeParse(await summariser.summarise({ channelId, messages }));
    if (result.success) return result.data;
    context.logger.warn(`the ${summariser.id} summariser returned no usable summary for ${channelId}; will retry`);
  } catch (error) {
    context.logger.warn(`the ${summariser.id} summariser failed for ${channelId}, will retry: ${errorMessage(error)}`);
  }
  return null;
}
