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
    accessCount: count(),
    lastAccessedAt: TimeSchema.nullable(),
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
  })
  .meta({
    id: 'ScoreBreakdown',
    description:
      'Each score term, 0..1, and the factors (superseded, faded; 1 when left out) the weighted mean is multiplied by',
  });

export const RecallHitSchema = z
  .strictObject({
    memory: MemorySchema,
    score: z.number(),
    breakdown: ScoreBreakdownSchema,
    match: z.enum(['fts', 'vector', 'hybrid', 'graph', 'recent']),
    ranks: z.strictObject({ fts: rowId().nullable(), vector: rowId().nullable() }),
    similarity: z.number().nullable(),
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
    omitted: count(),
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
    createdAt: TimeSchema,
  })
  .meta({ id: 'Message', description: 'One entry of the append-only message log' });

export const IngestResultSchema = z
  .strictObject({
    messages: z.array(MessageSchema),
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
