import { z } from 'zod';
import { decayPolicyNames } from './decay/decay.js';
import { maintenanceTasks } from './maintenance/maintenance-task.js';
import { PolicySchema } from './policy.js';
import { presetNames } from './presets.js';
import { RecallWeightsSchema, scoreTerms } from './recall/recall-policy.js';
import { MessageRoleSchema, ScopeSchema } from './schemas.js';

/*
 * What the engine returns, as zod schemas: the HTTP face's OpenAPI document describes its responses with
 * them, and `result-schemas.test.ts` checks at compile time that each one is exactly the type the engine's
 * method returns, so the two cannot drift apart. A schema with an `id` (`.meta({ id })`) is one named
 * component of the document. Objects are strict: a field the engine returns but the schema does not name
 * fails the HTTP tests that parse real responses with these schemas.
 */

/** A time as the engine returns it: ISO 8601 in UTC with milliseconds. */
export const TimeSchema = z.iso
  .datetime()
  .meta({ id: 'Time', description: 'ISO 8601 in UTC, e.g. 2024-06-15T12:00:00.000Z' });

const count = () => z.number().int().nonnegative();
const rowId = () => z.number().int().positive();

/** Which write path produced a memory. */
export const memorySources = [
  'manual',
  'conversation',
  'work',
  'extraction',
  'exchange',
  'episode',
  'consolidation',
  'dream',
  'command',
] as const;

/** The kinds of edge between memories. */
export const linkTypes = ['co_extracted', 'consolidated', 'semantic', 'supersedes'] as const;

export const MemorySchema = z
  .strictObject({
    id: rowId(),
    content: z.string(),
    category: z.string(),
    sector: z.enum(['semantic', 'episodic']),
    scope: ScopeSchema,
    userId: z.string().nullable(),
    channelId: z.string().nullable(),
    projectId: z.string().nullable(),
    topicId: z.string().nullable(),
    source: z.enum(memorySources),
    importance: z.number(),
    strength: z.number(),
    salience: z.number(),
    accessCount: count().describe(
      "How many recalls returned it. A user key sees the retrievals of its own personal memories only: any other memory (others' recalls touch it) reads 0, and its recalls rank it as never retrieved (ADR 52)",
    ),
    lastAccessedAt: TimeSchema.nullable().describe(
      'When a recall last returned it; null when never, and for a user key on any memory but its own personal ones (ADR 52)',
    ),
    pinned: z.boolean(),
    sourceMessageIds: z.array(rowId()).describe('The messages the memory was built from'),
    sourceIds: z.array(rowId()).describe('The memories it was merged or derived from'),
    validFrom: TimeSchema,
    supersededBy: rowId().nullable().describe('The newer memory that states what this one stated, or null'),
    archivedAt: TimeSchema.nullable(),
    fadedAt: TimeSchema.nullable().describe(
      'When decay put the memory to rest: archived, but recall still finds it (ADR 9); null otherwise',
    ),
    createdAt: TimeSchema,
    updatedAt: TimeSchema,
    embeddingModel: z.string().nullable(),
  })
  .meta({ id: 'Memory', description: 'A durable item the agent may recall' });

export const MemoryPageSchema = z
  .strictObject({ memories: z.array(MemorySchema), total: count(), limit: count(), offset: count() })
  .meta({ id: 'MemoryPage', description: 'A page of memories, newest first' });

const MemorySnapshotSchema = z.strictObject({
  content: z.string(),
  category: z.string(),
  importance: z.number(),
  pinned: z.boolean(),
  archivedAt: TimeSchema.nullable(),
});

const ChangeSchema = z.strictObject({ from: z.unknown(), to: z.unknown() });

export const MemoryVersionSchema = z
  .strictObject({
    id: rowId(),
    memoryId: rowId(),
    version: rowId(),
    action: z.enum(['create', 'update', 'archive', 'restore', 'merge']),
    actor: z.string().nullable(),
    reason: z.string().nullable(),
    changes: z
      .strictObject({
        content: ChangeSchema.exactOptional(),
        category: ChangeSchema.exactOptional(),
        importance: ChangeSchema.exactOptional(),
        pinned: ChangeSchema.exactOptional(),
        archivedAt: ChangeSchema.exactOptional(),
      })
      .describe('Each field this version changed: its value before and after'),
    snapshot: MemorySnapshotSchema,
    createdAt: TimeSchema,
  })
  .meta({ id: 'MemoryVersion', description: 'One entry of a memory’s history' });

export const MemoryLinkSchema = z
  .strictObject({
    sourceId: rowId(),
    targetId: rowId(),
    type: z.enum(linkTypes),
    strength: z.number(),
    createdAt: TimeSchema,
  })
  .meta({ id: 'MemoryLink', description: 'A directed, typed edge between two memories' });

const vectorLeg = z
  .enum(['used', 'no-model', 'model-failed', 'not-in-mode'])
  .describe('Whether the vector leg ran, and if not why: recall was then lexical only');

export const ScoreBreakdownSchema = z
  .strictObject({
    ...(Object.fromEntries(scoreTerms.map((term) => [term, z.number()])) as Record<
      (typeof scoreTerms)[number],
      z.ZodNumber
    >),
    superseded: z.number().exactOptional(),
    faded: z.number().exactOptional(),
    otherSpeaker: z.number().exactOptional(),
  })
  .meta({
    id: 'ScoreBreakdown',
    description:
      'Each score term, 0..1, and the factors (superseded, faded, otherSpeaker; 1 when left out) the weighted mean is multiplied by',
  });

export const RecallHitSchema = z
  .strictObject({
    memory: MemorySchema,
    score: z.number(),
    breakdown: ScoreBreakdownSchema,
    match: z.enum(['fts', 'vector', 'hybrid', 'graph', 'recent']),
    ranks: z.strictObject({ fts: rowId().nullable(), vector: rowId().nullable() }),
    similarity: z.number().nullable(),
    calibratedRelevance: z
      .number()
      .min(0)
      .max(1)
      .describe(
        "How well the memory matches the query, comparable across queries (0..1): the share of the query's words it contains weighted by rarity, or its cosine similarity, whichever is higher; the context's quality threshold reads it",
      ),
    linkedTo: z.strictObject({ id: rowId(), type: z.enum(linkTypes), strength: z.number() }).nullable(),
    explanation: z.string().exactOptional(),
  })
  .meta({ id: 'RecallHit', description: 'One memory a recall returned, with the reasons it was chosen' });

export const RecallResultSchema = z
  .strictObject({
    mode: z.enum(['hybrid', 'recent-first']),
    hits: z.array(RecallHitSchema),
    vectorLeg,
    queries: z.array(z.string()),
    weights: RecallWeightsSchema,
  })
  .meta({ id: 'RecallResult', description: 'What a recall found' });

export const ContextResultSchema = z
  .strictObject({
    text: z.string(),
    hits: z.array(RecallHitSchema),
    omitted: count().describe('Memories found but left out because they did not fit the word budget'),
    belowThreshold: count().describe(
      'Memories found but left out because their calibrated relevance is below `context.minRelevance`',
    ),
    words: count(),
    vectorLeg,
  })
  .meta({ id: 'ContextResult', description: 'The context block for the next reply and the memories in it' });

export const MessageSchema = z
  .strictObject({
    id: rowId(),
    channelId: z.string(),
    senderId: z.string(),
    role: MessageRoleSchema,
    content: z.string(),
    topicId: z.string().nullable(),
    replyTo: rowId().nullable(),
    externalId: z
      .string()
      .nullable()
      .describe('The id the message has in the system it came from (unique in its channel), or null'),
    createdAt: TimeSchema,
  })
  .meta({ id: 'Message', description: 'One entry of the append-only message log' });

export const AppendedMessageSchema = MessageSchema.extend({
  duplicate: z
    .boolean()
    .describe('True when the channel already had the message under its externalId: this is the stored one'),
}).meta({ id: 'AppendedMessage', description: 'A message an ingest was given, as stored' });

export const IngestResultSchema = z
  .strictObject({
    messages: z.array(AppendedMessageSchema),
    duplicate: z
      .boolean()
      .describe('True when every message of the input was already stored: nothing was appended, run or scheduled'),
    queued: z.boolean(),
    command: z
      .strictObject({
        command: z.enum(['remember', 'forget']),
        reply: z.string(),
        remembered: MemorySchema.nullable(),
        forgotten: z.array(MemorySchema),
      })
      .nullable(),
  })
  .meta({ id: 'IngestResult', description: 'The appended messages; extraction runs in the background' });

export const IngestBatchResultSchema = z
  .strictObject({ results: z.array(IngestResultSchema).describe('One result per item of the batch, in order') })
  .meta({ id: 'IngestBatchResult', description: 'What each message and exchange of a batch appended' });

const ExtractionReportSchema = z.strictObject({
  messages: count(),
  created: z.array(MemorySchema),
  updated: z.array(MemorySchema),
});

export const TopicExtractionReportSchema = ExtractionReportSchema.extend({ topicId: z.string() }).meta({
  id: 'TopicExtractionReport',
});

export const WorkExtractionReportSchema = ExtractionReportSchema.extend({
  sessionId: z.string(),
  projectId: z.string(),
}).meta({ id: 'WorkExtractionReport' });

export const TopicSchema = z
  .strictObject({
    id: z.string(),
    projectId: z.string().nullable(),
    title: z.string().nullable(),
    createdAt: TimeSchema,
  })
  .meta({ id: 'Topic' });

export const ProjectSchema = z
  .strictObject({ id: z.string(), name: z.string().nullable(), managed: z.boolean(), createdAt: TimeSchema })
  .meta({ id: 'Project' });

export const UserSchema = z.strictObject({ id: z.string(), displayName: z.string().nullable() }).meta({ id: 'User' });

export const ChannelSchema = z
  .strictObject({ id: z.string(), visibility: z.enum(['direct', 'private', 'public']), members: z.array(z.string()) })
  .meta({ id: 'Channel' });

export const PurgeReportSchema = z
  .strictObject({
    userId: z.string(),
    messages: count(),
    memories: count(),
    vectors: count(),
    versions: count(),
    links: count(),
    apiKeys: count(),
  })
  .meta({ id: 'PurgeReport', description: 'How many rows of each kind the purge deleted' });

const taskReport = <Shape extends z.ZodRawShape>(shape: Shape) =>
  z.strictObject({ ...shape, skipped: z.string().nullable().describe('Why the task did nothing, or null') });

export const MaintenanceReportSchema = z
  .strictObject({
    now: TimeSchema,
    decay: taskReport({
      policy: z.enum(decayPolicyNames),
      checked: count(),
      decayed: count(),
      archived: count(),
    }).exactOptional(),
    episodes: taskReport({ channels: count(), messages: count(), episodes: count() }).exactOptional(),
    consolidate: taskReport({ checked: count(), clusters: count(), merged: count() }).exactOptional(),
    link: taskReport({ checked: count(), created: count(), removed: count() }).exactOptional(),
    dream: taskReport({ owners: count(), insights: count() }).exactOptional(),
  })
  .meta({ id: 'MaintenanceReport', description: `A report per task that ran (${maintenanceTasks.join(', ')})` });

export const MemoryStatsSchema = z
  .strictObject({
    total: count(),
    active: count(),
    archived: count(),
    pinned: count(),
    byScope: z.record(z.string(), count()),
    byCategory: z.record(z.string(), count()),
    addedLast7Days: count(),
    expiring: count().describe('Active, unpinned memories decay will archive within 7 days unless retrieved'),
    mostAccessed: z.array(
      z.strictObject({
        id: rowId(),
        content: z.string(),
        accessCount: count(),
        lastAccessedAt: TimeSchema.nullable(),
      }),
    ),
    messages: count(),
    links: count(),
  })
  .meta({ id: 'MemoryStats' });

export const PolicyStateSchema = z
  .strictObject({
    preset: z.enum(presetNames),
    overrides: z
      .record(z.string(), z.unknown())
      .describe('The settings that differ from the preset, nested as in `policy`'),
    policy: PolicySchema,
    version: rowId().describe('The stored version this state is (1 when the database was created)'),
  })
  .meta({ id: 'PolicyState', description: 'The policy a database runs under' });

export const ChannelSummarySchema = z
  .strictObject({
    id: z.string(),
    visibility: z.enum(['direct', 'private', 'public']),
    latestMessageId: count().describe('The id of its newest message (0: none)'),
    extractedThrough: count().describe("The extraction worker's watermark in it (0: it never ran there)"),
  })
  .meta({ id: 'ChannelSummary', description: 'A channel with messages, and how far extraction has read it' });

export const MessagePageSchema = z
  .strictObject({
    channelId: z.string(),
    messages: z.array(
      MessageSchema.extend({
        memories: z
          .array(
            z.strictObject({
              id: rowId(),
              content: z.string(),
              scope: ScopeSchema,
              category: z.string(),
              source: z.enum(memorySources),
            }),
          )
          .describe('The active memories extracted from the message that the caller may see'),
      }),
    ),
    nextAfterId: rowId()
      .nullable()
      .describe('The id to ask the next page after, or null when this page reached the newest message'),
  })
  .meta({ id: 'MessagePage', description: "A page of a channel's messages, oldest first, with what was extracted" });

const epochMs = () => z.number().int().nonnegative().describe('Epoch milliseconds');

export const MaintenanceStatusSchema = z
  .strictObject({
    tasks: z.array(
      z.strictObject({
        task: z.enum(maintenanceTasks),
        enabled: z.boolean().describe("Whether the database's policy runs it (`maintenance.tasks`)"),
        states: z.array(
          z.strictObject({
            channelId: z.string().describe("The channel, or '' for a store-wide task"),
            task: z.string(),
            watermark: z
              .number()
              .int()
              .nonnegative()
              .nullable()
              .describe('The last message (or memory) fully processed, or null before the first run'),
            lastRunAt: epochMs().nullable(),
            details: z.record(z.string(), z.unknown()).nullable(),
          }),
        ),
        lastReport: z
          .unknown()
          .describe("The task's part of the last maintenance report in this process, or null when none ran"),
        lastReportAt: TimeSchema.nullable(),
      }),
    ),
    extraction: z.array(
      z.strictObject({
        channelId: z.string(),
        watermark: count(),
        backlog: count().describe('Messages past the watermark'),
        lastRunAt: epochMs().nullable(),
      }),
    ),
  })
  .meta({ id: 'MaintenanceStatus', description: "Each maintenance task's state and the extraction backlog" });

const distribution = () =>
  z.array(count()).describe('Counts per bucket of 0.1 from 0 to 1, ten buckets (the last includes 1)');

export const AnalyticsSeriesSchema = z
  .strictObject({
    addedPerDay: z
      .array(z.strictObject({ day: z.string().describe('YYYY-MM-DD (UTC)'), count: count() }))
      .describe('Memories created per day, the last 30 days, oldest first'),
    distributions: z.strictObject({ strength: distribution(), salience: distribution(), importance: distribution() }),
    archivedBy: z.record(z.string(), count()).describe('Archived memories by cause'),
    recentlyFaded: z.array(
      z.strictObject({ id: rowId(), content: z.string(), fadedAt: TimeSchema, reason: z.string().nullable() }),
    ),
    extractionBacklog: count().describe('Messages past the extraction watermark, over every channel'),
  })
  .meta({ id: 'AnalyticsSeries', description: "The series of the inspector's analytics charts" });
