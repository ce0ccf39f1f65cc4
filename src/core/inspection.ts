import { z } from 'zod';
import type { MaintenanceState } from '../storage/maintenance-state-store.js';
import type { ChannelVisibility } from '../storage/membership-store.js';
import type { Message } from '../storage/message-store.js';
import { asOfNow } from './current-values.js';
import { DAY_MS } from './decay/decay.js';
import type { EngineContext } from './engine-context.js';
import { ExtractionTask } from './ingest/extraction-task.js';
import type { MaintenanceReport } from './maintenance/maintain.js';
import { type MaintenanceTask, maintenanceTasks } from './maintenance/maintenance-task.js';
import { ChannelIdSchema, parseInput } from './schemas.js';
import { visibleOwners } from './scope.js';
import type { Memory, Viewer } from './types.js';
import { requireVisible } from './visibility.js';

/** A channel as the inspector lists it. */
export interface ChannelSummary {
  id: string;
  visibility: ChannelVisibility;
  /** The id of its newest message (0: none). */
  latestMessageId: number;
  /** The extraction worker's watermark in it (0: it never ran there). */
  extractedThrough: number;
}

/** A message and the active memories its extraction wrote (those the caller may see). */
export interface MessageWithMemories extends Message {
  memories: Array<Pick<Memory, 'id' | 'content' | 'scope' | 'category' | 'source'>>;
}

/** Most messages one page of `messages` returns. */
export const MAX_MESSAGE_PAGE = 200;

/** Input of `messages`: a channel's messages after `afterId`, oldest first, a page at a time. */
export const MessagePageInputSchema = z.strictObject({
  channelId: ChannelIdSchema,
  afterId: z.number().int().min(0, 'after must not be negative').default(0),
  limit: z
    .number()
    .int()
    .min(1, 'limit must be at least 1')
    .max(MAX_MESSAGE_PAGE, `limit must be at most ${MAX_MESSAGE_PAGE}`)
    .default(50),
});
export type MessagePageInput = z.input<typeof MessagePageInputSchema>;

/** A page of a channel's messages with what was extracted from each. */
export interface MessagePage {
  channelId: string;
  messages: MessageWithMemories[];
  /** The id to ask the next page after, or null when this page reached the newest message. */
  nextAfterId: number | null;
}

/** One maintenance task's stored progress and the last report this process saw it write. */
export interface TaskStatus {
  task: MaintenanceTask;
  /** Whether the database's policy runs it (`maintenance.tasks`). */
  enabled: boolean;
  /** Its `maintenance_state` rows: one store-wide (channel `''`) or one per channel. */
  states: MaintenanceState[];
  /** What the last run in this process reported, or null when none ran since the process started. */
  lastReport: unknown;
  lastReportAt: string | null;
}

/** Maintenance as an administrator inspects it. */
export interface MaintenanceStatus {
  tasks: TaskStatus[];
  /** Per channel: the extraction watermark and how many messages are past it. */
  extraction: Array<{ channelId: string; watermark: number; backlog: number; lastRunAt: number | null }>;
}

/** Counts per bucket of a 0..1 value, ten buckets of 0.1 (the last includes 1). */
export type Distribution = number[];

/** The analytics series behind the inspector's charts. */
export interface AnalyticsSeries {
  /** Memories created per day (UTC), the last `days` days, oldest first, archived ones included. */
  addedPerDay: Array<{ day: string; count: number }>;
  /** Distributions over active memories under the database's decay, as of now. */
  distributions: { strength: Distribution; salience: Distribution; importance: Distribution };
  /** Archived memories by cause: `faded` (decay), `superseded`, `forgotten or merged`. */
  archivedBy: Record<string, number>;
  /** The latest memories decay archived, with the reason their archive version records. */
  recentlyFaded: Array<{ id: number; content: string; fadedAt: string; reason: string | null }>;
  /** Messages past the extraction watermark, over every channel. */
  extractionBacklog: number;
}

/** Days `analytics` charts. */
export const ANALYTICS_DAYS = 30;
const PAGE = 500;

/** Every channel with messages, with its visibility and extraction progress (`readable` filters for a user). */
export async function listChannels(
  context: EngineContext,
  readable: (channelId: string, visibility: ChannelVisibility) => Promise<boolean> = async () => true,
): Promise<ChannelSummary[]> {
  const { messages, memberships, maintenanceState } = context.storage;
  const watermarks = new Map(
    (await maintenanceState.list(ExtractionTask.channel)).map((state) => [state.channelId, state.watermark ?? 0]),
  );
  const channels: ChannelSummary[] = [];
  for (const id of await messages.channelIds()) {
    const visibility = (await memberships.getChannel(id))?.visibility ?? 'private';
    if (!(await readable(id, visibility))) continue;
    channels.push({
      id,
      visibility,
      latestMessageId: await messages.latestId(id),
      extractedThrough: watermarks.get(id) ?? 0,
    });
  }
  return channels;
}

/**
 * A page of a channel's messages, each with the active memories that cite it among those `viewerOf`
 * lets the caller see (an administrator: the sender's, the channel's, the topic's and global ones).
 */
export async function channelMessages(
  context: EngineContext,
  input: MessagePageInput,
  viewerOf: (message: Message) => Promise<Viewer>,
): Promise<MessagePage> {
  const { channelId, afterId, limit } = parseInput(MessagePageInputSchema, input, 'messages');
  const page = await context.storage.messages.listAfter(channelId, afterId, limit + 1);
  const shown = page.slice(0, limit);
  const messages: MessageWithMemories[] = [];
  for (const message of shown) {
    const cited = await context.storage.extraction.citing(message.id, visibleOwners(await viewerOf(message)));
    messages.push({
      ...message,
      memories: cited.map(({ id, content, scope, category, source }) => ({ id, content, scope, category, source })),
    });
  }
  return { channelId, messages, nextAfterId: page.length > limit ? (shown.at(-1)?.id ?? null) : null };
}

/** The messages a memory came from, that exist still (`readable` filters for a user); NOT_FOUND unless visible. */
export async function memorySources(
  context: EngineContext,
  id: number,
  viewer: Viewer | undefined,
  readable: (message: Message) => Promise<boolean> = async () => true,
): Promise<Message[]> {
  const memory = await requireVisible(context, id, viewer);
  const found = await context.storage.messages.get(memory.sourceMessageIds);
  const shown: Message[] = [];
  for (const message of found) if (await readable(message)) shown.push(message);
  return shown;
}

/** Each task's stored state and last report, and the extraction watermarks with their backlog. */
export async function maintenanceStatus(
  context: EngineContext,
  lastReports: ReadonlyMap<MaintenanceTask, { report: unknown; at: string }>,
): Promise<MaintenanceStatus> {
  const { maintenanceState, messages } = context.storage;
  const tasks: TaskStatus[] = [];
  for (const task of maintenanceTasks) {
    const last = lastReports.get(task);
    tasks.push({
      task,
      enabled: context.policy.maintenance.tasks.includes(task),
      states: await maintenanceState.list(task),
      lastReport: last?.report ?? null,
      lastReportAt: last?.at ?? null,
    });
  }
  const states = new Map(
    (await maintenanceState.list(ExtractionTask.channel)).map((state) => [state.channelId, state]),
  );
  const extraction: MaintenanceStatus['extraction'] = [];
  for (const channelId of await messages.channelIds()) {
    const state = states.get(channelId);
    const watermark = state?.watermark ?? 0;
    extraction.push({
      channelId,
      watermark,
      backlog: await messages.countAfter(channelId, watermark),
      lastRunAt: state?.lastRunAt ?? null,
    });
  }
  return { tasks, extraction };
}

/** Remembers each task's last report of `maintain`, for `maintenanceStatus`. */
export function recordReports(
  lastReports: Map<MaintenanceTask, { report: unknown; at: string }>,
  report: MaintenanceReport,
): MaintenanceReport {
  for (const task of maintenanceTasks) {
    const taskReport = report[task];
    if (taskReport) lastReports.set(task, { report: taskReport, at: report.now });
  }
  return report;
}

/** The series of the analytics view, read a page at a time. */
export async function analyticsSeries(context: EngineContext): Promise<AnalyticsSeries> {
  const { storage } = context;
  const now = context.clock.now();
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const first = today - (ANALYTICS_DAYS - 1) * DAY_MS;
  const perDay = new Array<number>(ANALYTICS_DAYS).fill(0);
  const countDay = (memory: Memory) => {
    const index = Math.floor((Date.parse(memory.createdAt) - first) / DAY_MS);
    if (index >= 0 && index < ANALYTICS_DAYS) perDay[index] = (perDay[index] ?? 0) + 1;
  };
  const buckets = () => new Array<number>(10).fill(0);
  const distributions = { strength: buckets(), salience: buckets(), importance: buckets() };
  const bucket = (values: number[], value: number) => {
    const index = Math.min(9, Math.max(0, Math.floor(value * 10)));
    values[index] = (values[index] ?? 0) + 1;
  };
  for (let afterId = 0; ; ) {
    const page = await storage.maintenance.listAfter(afterId, PAGE);
    if (page.length === 0) break;
    for (const memory of await asOfNow(context, page)) {
      countDay(memory);
      bucket(distributions.strength, memory.strength);
      bucket(distributions.salience, memory.salience);
      bucket(distributions.importance, memory.importance);
    }
    afterId = page.at(-1)?.id ?? afterId;
  }
  const archivedBy: Record<string, number> = { faded: 0, superseded: 0, 'forgotten or merged': 0 };
  const faded: Memory[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await storage.memories.list({ owners: null, archived: 'only', limit: PAGE, offset });
    for (const memory of page.memories) {
      countDay(memory);
      const cause = memory.fadedAt ? 'faded' : memory.supersededBy !== null ? 'superseded' : 'forgotten or merged';
      archivedBy[cause] = (archivedBy[cause] ?? 0) + 1;
      if (memory.fadedAt) faded.push(memory);
    }
    if (page.memories.length < PAGE) break;
  }
  const recentlyFaded: AnalyticsSeries['recentlyFaded'] = [];
  for (const memory of faded.sort((a, b) => (b.fadedAt ?? '').localeCompare(a.fadedAt ?? '')).slice(0, 10)) {
    const archive = (await storage.memories.history(memory.id)).findLast((version) => version.action === 'archive');
    recentlyFaded.push({
      id: memory.id,
      content: memory.content,
      fadedAt: memory.fadedAt ?? '',
      reason: archive?.reason ?? null,
    });
  }
  return {
    addedPerDay: perDay.map((count, index) => ({
      day: new Date(first + index * DAY_MS).toISOString().slice(0, 10),
      count,
    })),
    distributions,
    archivedBy,
    recentlyFaded,
    extractionBacklog: (await maintenanceStatus(context, new Map())).extraction.reduce(
      (sum, channel) => sum + channel.backlog,
      0,
    ),
  };
}
