import { z } from 'zod';
import { IngestFileProgressSchema, MAX_ID_CHARS, MAX_NAME_CHARS, MessageExternalIdSchema } from '../schemas.js';
import { KEPT_LEFT_NAMES } from '../speaker-label.js';
import type { MemorySource } from '../types.js';

/**
 * The mneme export format (docs/export-format.md, ADR 15): JSON lines, a header first, then records
 * in the order of `RECORD_ORDER`, then an `end` line. The version changes when a reader of the previous
 * version could not read a file of the new one; an optional field added to a record does not change it.
 */
export const EXPORT_FORMAT = 'mneme-export';
/**
 * The newest version, which this mneme writes and reads: 2 added `ingestFile` records, 3 `idempotencyKey` records, 4
 * the `leftNames` of a user record (a reader refuses a record type or a field it does not know). A file is written as
 * the oldest version that reads it: one without them as version 1, which every reader reads.
 */
export const EXPORT_FORMAT_VERSION = 4;
/** The version that added `ingestFile` records. */
export const INGEST_FILE_VERSION = 2;
/** The version that added `idempotencyKey` records. */
export const IDEMPOTENCY_KEY_VERSION = 3;
/** The version that added a user record's `leftNames`. */
export const LEFT_NAMES_VERSION = 4;
/** The versions this mneme reads. */
export const EXPORT_FORMAT_VERSIONS = [1, 2, 3, 4] as const;
/** The version of a file that holds no record of a later version. */
export const FIRST_EXPORT_FORMAT_VERSION = 1;

/** The record types between the header and the end line, in the order a file holds them. */
export const RECORD_ORDER = [
  'policy',
  'user',
  'project',
  'topic',
  'channel',
  'membership',
  'message',
  'memory',
  'link',
  'watermark',
  'ingestFile',
  'idempotencyKey',
] as const;

export type RecordType = (typeof RECORD_ORDER)[number];

/**
 * An id as mneme stores it: every face trims the ids it is given (`core/schemas.ts`), so a stored id never begins or
 * ends with white space, and one that does is refused rather than trimmed (it would be another row's id: " ann" is
 * ann to every other face, and trimming it here would join two users' records in one).
 */
const id = z
  .string()
  .min(1)
  .max(MAX_ID_CHARS)
  .refine((value) => value.trim() === value, {
    error: (issue) =>
      `${JSON.stringify(issue.input)} begins or ends with white space, which no id mneme stores does (every face trims ids)`,
  });
const rowId = z.number().int().positive();
const text = z.string();
/** ISO 8601 as `Date.toISOString` writes it; read as epoch milliseconds. */
const time = z.iso.datetime().transform((value) => Date.parse(value));
const unit = z.number().min(0).max(1);
const sources = [
  'manual',
  'conversation',
  'work',
  'extraction',
  'exchange',
  'episode',
  'consolidation',
  'dream',
  'command',
] as const satisfies readonly MemorySource[];

export const HeaderSchema = z.object({
  type: z.literal('header'),
  format: z.literal(EXPORT_FORMAT, { error: `not a ${EXPORT_FORMAT} file (its first line must be the header)` }),
  version: z.literal(EXPORT_FORMAT_VERSIONS, {
    error: `this mneme reads ${EXPORT_FORMAT} versions ${EXPORT_FORMAT_VERSIONS[0]} to ${EXPORT_FORMAT_VERSIONS.at(-1)} only`,
  }),
  mneme: text,
  exportedAt: time,
  /** The user a per-user export is of, or null for everything. */
  user: id.nullable(),
  preset: text,
  overrides: z.record(z.string(), z.unknown()),
  /**
   * Whether the database it came from ever had an API key (its HTTP service then required one): a
   * database it is imported into requires one too. Files written before this field read as false.
   */
  apiKeys: z.boolean().optional(),
});

const PolicyRecordSchema = z.strictObject({
  type: z.literal('policy'),
  version: z.number().int().positive(),
  preset: text,
  overrides: z.record(z.string(), z.unknown()),
  change: text,
  actor: text.nullable(),
  createdAt: time,
});

const UserRecordSchema = z.strictObject({
  type: z.literal('user'),
  id,
  displayName: text.nullable(),
  createdAt: time,
  updatedAt: time,
  /**
   * The names the user left by renaming themselves, oldest first, with when (`users.left_name`, `left_at`; ADR 44):
   * the insert of a memory made from messages sent before a name was left labels it. Version 4; left out when none.
   */
  leftNames: z
    .array(z.strictObject({ name: text.min(1).max(MAX_NAME_CHARS), at: time }))
    .min(1)
    .max(KEPT_LEFT_NAMES, `leftNames holds at most the last ${KEPT_LEFT_NAMES} names a user left`)
    .optional(),
});

const ProjectRecordSchema = z.strictObject({
  type: z.literal('project'),
  id,
  name: text.nullable(),
  managed: z.boolean(),
  createdAt: time,
});

const TopicRecordSchema = z.strictObject({
  type: z.literal('topic'),
  id,
  projectId: id.nullable(),
  title: text.nullable(),
  createdAt: time,
});

const ChannelRecordSchema = z.strictObject({
  type: z.literal('channel'),
  id,
  visibility: z.enum(['direct', 'private', 'public']),
  createdAt: time,
  updatedAt: time,
});

const MembershipRecordSchema = z.strictObject({
  type: z.literal('membership'),
  kind: z.enum(['channel', 'topic', 'project']),
  spaceId: id,
  userId: id,
  addedAt: time,
});

const MessageRecordSchema = z.strictObject({
  type: z.literal('message'),
  id: rowId,
  channelId: id,
  senderId: id,
  role: z.enum(['user', 'assistant', 'system']),
  content: text,
  topicId: id.nullable(),
  replyTo: rowId.nullable(),
  createdAt: time,
  // Optional message fields of later releases go here (each `.optional()`, left out when absent), so
  // that a file without them still reads and the format version stays 1.
  /** The chat platform's event id the message was ingested with (ADR 14); left out when it had none. */
  externalId: MessageExternalIdSchema.optional(),
});

const VersionSchema = z.strictObject({
  version: z.number().int().positive(),
  action: z.enum(['create', 'update', 'archive', 'restore', 'merge']),
  actor: text.nullable(),
  reason: text.nullable(),
  changes: z.record(z.string(), z.strictObject({ from: z.unknown(), to: z.unknown() })),
  snapshot: z.strictObject({
    content: text,
    category: text,
    importance: z.number(),
    pinned: z.boolean(),
    archivedAt: z.string().nullable(),
  }),
  createdAt: time,
});

const MemoryRecordSchema = z.strictObject({
  type: z.literal('memory'),
  id: rowId,
  content: text.min(1),
  category: text.min(1),
  sector: z.enum(['semantic', 'episodic']),
  scope: z.enum(['personal', 'room', 'project', 'session', 'global']),
  userId: id.nullable(),
  channelId: id.nullable(),
  projectId: id.nullable(),
  topicId: id.nullable(),
  source: z.enum(sources),
  importance: unit,
  strength: z.number().finite(),
  salience: z.number().finite(),
  accessCount: z.number().int().min(0),
  lastAccessedAt: time.nullable(),
  pinned: z.boolean(),
  sourceMessageIds: z.array(rowId),
  sourceIds: z.array(rowId),
  validFrom: time,
  supersededBy: rowId.nullable(),
  archivedAt: time.nullable(),
  fadedAt: time.nullable(),
  createdAt: time,
  updatedAt: time,
  decayedAt: time.nullable(),
  searchContext: text.nullable(),
  searchContextMessageId: rowId.nullable(),
  chunk: z.strictObject({ messageId: rowId, index: z.number().int().min(0) }).nullable(),
  versions: z.array(VersionSchema),
});

const LinkRecordSchema = z.strictObject({
  type: z.literal('link'),
  sourceId: rowId,
  targetId: rowId,
  linkType: z.enum(['co_extracted', 'consolidated', 'semantic', 'supersedes']),
  strength: unit,
  createdAt: time,
});

const WatermarkRecordSchema = z.strictObject({
  type: z.literal('watermark'),
  channelId: z.string().max(MAX_ID_CHARS + 10),
  task: id,
  watermark: z.number().int().min(0).nullable(),
  lastRunAt: time.nullable(),
  details: z.record(z.string(), z.unknown()).nullable(),
});

/** How far `mneme ingest` got in one file (ADR 14; version 2, full export only). */
const IngestFileRecordSchema = z.strictObject({
  type: z.literal('ingestFile'),
  path: IngestFileProgressSchema.shape.path,
  line: IngestFileProgressSchema.shape.line,
  prefixSha256: IngestFileProgressSchema.shape.prefixSha256,
  updatedAt: time,
});

/**
 * An HTTP idempotency key whose request's work was done (ADR 14, ADR 37; version 3, full export only), without its
 * response: a retry under it after a restore is answered CONFLICT instead of being done twice.
 */
const IdempotencyKeyRecordSchema = z.strictObject({
  type: z.literal('idempotencyKey'),
  /** The key space: `user:<id>`, `open:<label>` or `admin:<label>` (an administrator key's are not exported). */
  principal: z
    .string()
    .max(MAX_ID_CHARS + 300)
    .regex(/^(user|open|admin):./, 'principal must be user:<id>, open:<label> or admin:<label>'),
  key: z.string().regex(/^[\x21-\x7e]{1,255}$/, 'key must be 1 to 255 visible ASCII characters'),
  requestSha256: z.string().regex(/^[0-9a-f]{64}$/, 'requestSha256 must be 64 lowercase hex digits'),
  status: z.number().int().min(100).max(599).nullable(),
  expiresAt: time,
});

export const EndSchema = z.strictObject({
  type: z.literal('end'),
  /** How many records lie between the header and this line: a shorter file was cut off. */
  records: z.number().int().min(0),
});

export const RecordSchema = z.discriminatedUnion('type', [
  PolicyRecordSchema,
  UserRecordSchema,
  ProjectRecordSchema,
  TopicRecordSchema,
  ChannelRecordSchema,
  MembershipRecordSchema,
  MessageRecordSchema,
  MemoryRecordSchema,
  LinkRecordSchema,
  WatermarkRecordSchema,
  IngestFileRecordSchema,
  IdempotencyKeyRecordSchema,
]);

export type ExportHeader = z.input<typeof HeaderSchema>;
/** A record as written (times as ISO 8601). */
export type ExportRecord = z.input<typeof RecordSchema>;
/** A record as read (times as epoch milliseconds). */
export type ParsedRecord = z.output<typeof RecordSchema>;
export type ParsedMemoryRecord = z.output<typeof MemoryRecordSchema>;
export type ParsedMessageRecord = z.output<typeof MessageRecordSchema>;
export type ParsedUserRecord = z.output<typeof UserRecordSchema>;
