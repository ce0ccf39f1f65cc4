import { randomUUID } from 'node:crypto';
import type { MaintenanceState } from '../../storage/maintenance-state-store.js';
import {
  IMPORT_TARGET_NOT_EMPTY,
  type ImportedMemory,
  type ImportedMessage,
  type ImportedVersion,
  type ImportSession,
  type TransferChannel,
  type TransferIdempotencyKey,
  type TransferIngestFile,
  type TransferLink,
  type TransferMembership,
  type TransferProject,
  type TransferTopic,
  type TransferUser,
} from '../../storage/transfer-store.js';
import { AUDIENCE_TASK, recheckAudiences } from '../derived-audience.js';
import type { EngineContext } from '../engine-context.js';
import { ErrorCode, MnemeError } from '../errors.js';
import { ExtractionTask, topicKey } from '../ingest/extraction-task.js';
import type { PolicyOptions } from '../policy.js';
import { checkPolicyRequest, refreshPolicy } from '../policy-state.js';
import { isReservedId, reservedIdMessage } from '../reserved-ids.js';
import { parseInput } from '../schemas.js';
import { ownerKey } from '../scope.js';
import { leftName } from '../speaker-label.js';
import {
  EndSchema,
  EXPORT_FORMAT,
  HeaderSchema,
  LEFT_NAMES_VERSION,
  type ParsedMemoryRecord,
  type ParsedRecord,
  type ParsedUserRecord,
  RECORD_ORDER,
  RecordSchema,
  type RecordType,
} from './export-format.js';
import { ImportAudience } from './import-audience.js';
import {
  emptyReport,
  type ImportOptions,
  type ImportReport,
  lineError,
  type NumberedLine,
  numberedLines,
} from './import-lines.js';
import { importMem0 } from './import-mem0.js';

/** Records written in one batch of the import's transaction. */
const BATCH = 500;

/**
 * Restores an export (lines of docs/export-format.md) into this database, which must be empty, or
 * adds a mem0 export's memories (`from: 'mem0'`). Everything is written in one transaction: a bad
 * line (named by its number) or a failure leaves the database as it was. Ids are given anew; every
 * reference (replies, provenance, supersession, links, versions, watermarks) follows its row.
 */
export async function importData(
  context: EngineContext,
  lines: AsyncIterable<string> | Iterable<string>,
  options: ImportOptions = {},
): Promise<ImportReport> {
  const from = options.from ?? 'mneme';
  if (from === 'mem0') return importMem0(context, lines);
  // Checked before reading the file, and again under the write lock: an import that finished meanwhile
  // (another process) is not imported twice.
  if (!(await context.storage.transfer.isEmpty())) throw new MnemeError(ErrorCode.Conflict, IMPORT_TARGET_NOT_EMPTY);
  const session = await context.storage.transfer.beginImport({ mustBeEmpty: true });
  try {
    const report = await restore(context, session, numberedLines(lines));
    await session.commit();
    await refreshPolicy(context);
    await recheckAudiences(context);
    return report;
  } catch (error) {
    await session.rollback();
    throw error;
  }
}

/** Sorted old ids and the new ids they became: the file's ids increase, so a lookup is a binary search. */
class IdMap {
  private readonly from: number[] = [];
  private readonly to: number[] = [];

  add(oldId: number, newId: number): void {
    this.from.push(oldId);
    this.to.push(newId);
  }

  /** The new id of `oldId`, or undefined when the file did not hold it. */
  get(oldId: number): number | undefined {
    const index = this.floorIndex(oldId);
    return index >= 0 && this.from[index] === oldId ? this.to[index] : undefined;
  }

  /** The new id of the largest old id at most `oldId` (a watermark: everything up to it is done), or 0. */
  floor(oldId: number): number {
    const index = this.floorIndex(oldId);
    return index >= 0 ? (this.to[index] ?? 0) : 0;
  }

  private floorIndex(oldId: number): number {
    let low = 0;
    let high = this.from.length - 1;
    let found = -1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      if ((this.from[middle] ?? 0) <= oldId) {
        found = middle;
        low = middle + 1;
      } else high = middle - 1;
    }
    return found;
  }
}

type PendingBatch =
  | { type: 'user'; rows: TransferUser[] }
  | { type: 'project'; rows: TransferProject[] }
  | { type: 'topic'; rows: TransferTopic[] }
  | { type: 'channel'; rows: TransferChannel[] }
  | { type: 'membership'; rows: TransferMembership[] }
  | { type: 'message'; rows: Array<{ oldId: number; message: ImportedMessage }> }
  | { type: 'memory'; rows: Array<{ line: number; record: ParsedMemoryRecord }> }
  | { type: 'link'; rows: Array<Omit<TransferLink, 'id'>> }
  | { type: 'ingestFile'; rows: TransferIngestFile[] }
  | { type: 'idempotencyKey'; rows: TransferIdempotencyKey[] };

/** Whether a first line is meant as an export's header: a JSON object of type `header` or of this format. */
function looksLikeHeader(text: string): boolean {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return false;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { type, format } = value as { type?: unknown; format?: unknown };
  return type === 'header' || format === EXPORT_FORMAT;
}

async function restore(
  context: EngineContext,
  session: ImportSession,
  lines: AsyncGenerator<NumberedLine>,
): Promise<ImportReport> {
  const first = await lines.next();
  if (first.done) throw new MnemeError(ErrorCode.InvalidInput, 'the file is empty; nothing was imported');
  let header: ReturnType<typeof HeaderSchema.parse>;
  if (!looksLikeHeader(first.value.text)) {
    // Not a pile of schema errors about a line that is no header at all (a mem0 file imported without --from).
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `line ${first.value.number}: not a ${EXPORT_FORMAT} file: its first line must be the header ` +
        `({"type":"header","format":"${EXPORT_FORMAT}",...}, as mneme export writes it); ` +
        "a mem0 export is imported with --from mem0 (importData(lines, { from: 'mem0' })); nothing was imported",
    );
  }
  try {
    header = parseInput(HeaderSchema, JSON.parse(first.value.text), 'header');
    checkPolicyRequest({ preset: header.preset, policy: header.overrides as PolicyOptions });
  } catch (error) {
    throw lineError(first.value.number, error);
  }
  const report = emptyReport('mneme', header.user);
  const messages = new IdMap();
  const memories = new IdMap();
  const projects = new Set<string>();
  const topics = new Set<string>();
  const channels = new Set<string>();
  /** The newest new message id of each channel and topic, for the watermarks of a file without them. */
  const latestOfChannel = new Map<string, number>();
  const latestOfTopic = new Map<string, number>();
  /** References between memories (possibly to later ones): set once every memory is in. */
  const references: Array<{ line: number; id: number; supersededBy: number | null; sourceIds: number[] }> = [];
  const policies: Parameters<ImportSession['replacePolicy']>[0][number][] = [];
  const watermarks: MaintenanceState[] = [];
  /** The paths of the file's `ingestFile` records: each names its file once. */
  const ingestPaths = new Set<string>();
  /** Who could see what, as the file tells it: a record reaching past it is refused. */
  const audience = new ImportAudience();
  /** The keys of the records of the current type (a type's records come together): each row is written once. */
  const keys = new Set<string>();
  let section = -1;
  let records = 0;
  let ended: number | null = null;
  let batch: PendingBatch | null = null;
  let batchLines: [number, number] = [0, 0];

  /** Old ids of the messages queued but not written yet. */
  const queuedMessages = new Set<number>();
  let lastMessage = 0;
  let lastMemory = 0;

  const flush = async () => {
    const pending = batch;
    batch = null;
    queuedMessages.clear();
    if (!pending) return;
    try {
      await write(pending);
    } catch (error) {
      const [from, to] = batchLines;
      throw lineError(from === to ? from : `lines ${from}-${to}`, error);
    }
  };

  const write = async (pending: PendingBatch) => {
    switch (pending.type) {
      case 'user':
        await session.putUsers(pending.rows);
        report.users += pending.rows.length;
        return;
      case 'project':
        await session.putProjects(pending.rows);
        report.projects += pending.rows.length;
        return;
      case 'topic':
        await session.putTopics(pending.rows);
        report.topics += pending.rows.length;
        return;
      case 'channel':
        await session.putChannels(pending.rows);
        report.channels += pending.rows.length;
        return;
      case 'membership':
        await session.putMemberships(pending.rows);
        report.memberships += pending.rows.length;
        return;
      case 'message': {
        const ids = await session.appendMessages(pending.rows.map((row) => row.message));
        pending.rows.forEach((row, index) => {
          const id = ids[index] ?? 0;
          messages.add(row.oldId, id);
          latestOfChannel.set(row.message.channelId, id);
          if (row.message.topicId !== null) latestOfTopic.set(row.message.topicId, id);
        });
        report.messages += ids.length;
        return;
      }
      case 'memory': {
        const ids = await session.insertMemories(pending.rows.map((row) => importedMemory(row.record, messages)));
        const versions: ImportedVersion[] = [];
        pending.rows.forEach((row, index) => {
          const id = ids[index] ?? 0;
          memories.add(row.record.id, id);
          for (const version of row.record.versions) versions.push({ ...version, memoryId: id });
        });
        await session.addVersions(versions);
        report.memories += ids.length;
        report.versions += versions.length;
        return;
      }
      case 'link':
        await session.addLinks(pending.rows);
        report.links += pending.rows.length;
        return;
      case 'ingestFile':
        await session.putIngestFiles(pending.rows);
        report.ingestFiles += pending.rows.length;
        return;
      case 'idempotencyKey':
        await session.putIdempotencyKeys(pending.rows);
        report.idempotencyKeys += pending.rows.length;
        return;
    }
  };

  const queue = async <Type extends PendingBatch['type']>(
    type: Type,
    line: number,
    row: Extract<PendingBatch, { type: Type }>['rows'][number],
  ) => {
    if (batch && (batch.type !== type || batch.rows.length >= BATCH)) await flush();
    if (!batch) {
      batch = { type, rows: [] } as unknown as PendingBatch;
      batchLines = [line, line];
    }
    (batch.rows as unknown[]).push(row);
    batchLines[1] = line;
  };

  for await (const { number, text } of lines) {
    let record: ParsedRecord;
    try {
      if (ended !== null) throw new Error('a line follows the end line');
      const value: unknown = JSON.parse(text);
      if (isEnd(value)) {
        ended = parseInput(EndSchema, value, 'record').records;
        continue;
      }
      record = parseInput(RecordSchema, value, 'record');
      const position = RECORD_ORDER.indexOf(record.type);
      if (position < section) {
        throw new Error(
          `a ${record.type} record after ${plural(RECORD_ORDER[section] ?? record.type)}: records must come in the order ${RECORD_ORDER.join(', ')}`,
        );
      }
      if (position !== section) keys.clear();
      section = position;
      records++;
      checkReferences(record, { messages, projects, topics, channels, queuedMessages, lastMessage, lastMemory });
      checkPersons(record);
      checkOnce(record, keys);
      if (record.type === 'ingestFile') checkIngestFile(record, header, ingestPaths);
      if (record.type === 'idempotencyKey') checkIdempotencyKeyRecord(header);
      if (record.type === 'user') checkLeftNames(record, header, context.clock.now());
      if (header.user !== null) checkOwnRecord(record, header.user);
      if (record.type === 'channel') audience.addChannel(record.id, record.visibility);
      if (record.type === 'membership') audience.addMembership(number, record, channels.has(record.spaceId));
      if (record.type === 'message') audience.addMessage(record);
      if (record.type === 'memory') audience.addMemory(number, record);
      if (record.type === 'message') lastMessage = record.id;
      if (record.type === 'memory') lastMemory = record.id;
    } catch (error) {
      throw lineError(number, error);
    }
    switch (record.type) {
      case 'policy':
        try {
          checkPolicyRequest({ preset: record.preset, policy: record.overrides as PolicyOptions });
        } catch (error) {
          throw lineError(number, error);
        }
        policies.push({ ...record });
        break;
      case 'user':
        await queue('user', number, { ...record, leftNames: record.leftNames ?? [] });
        break;
      case 'project':
        projects.add(record.id);
        await queue('project', number, { ...record });
        break;
      case 'topic':
        topics.add(record.id);
        await queue('topic', number, { ...record });
        break;
      case 'channel':
        channels.add(record.id);
        await queue('channel', number, { ...record });
        break;
      case 'membership':
        await queue('membership', number, { ...record });
        break;
      case 'message': {
        // A reply to a message of this batch needs that message's new id: write the batch first.
        if (record.replyTo !== null && queuedMessages.has(record.replyTo)) await flush();
        const { type: _type, id, ...message } = record;
        await queue('message', number, {
          oldId: id,
          message: {
            ...message,
            externalId: message.externalId ?? null,
            replyTo: record.replyTo === null ? null : (messages.get(record.replyTo) ?? null),
          },
        });
        queuedMessages.add(id);
        break;
      }
      case 'memory': {
        if (record.supersededBy !== null || record.sourceIds.length > 0) {
          references.push({
            line: number,
            id: record.id,
            supersededBy: record.supersededBy,
            sourceIds: record.sourceIds,
          });
        }
        await queue('memory', number, { line: number, record });
        break;
      }
      case 'link': {
        await flush();
        const sourceId = memories.get(record.sourceId);
        const targetId = memories.get(record.targetId);
        if (sourceId === undefined || targetId === undefined) {
          throw lineError(
            number,
            new Error(
              `the link names memory ${sourceId === undefined ? record.sourceId : record.targetId}, which the file does not hold`,
            ),
          );
        }
        await queue('link', number, {
          sourceId,
          targetId,
          type: record.linkType,
          strength: record.strength,
          createdAt: record.createdAt,
        });
        break;
      }
      case 'watermark':
        watermarks.push({
          channelId: record.channelId,
          task: record.task,
          watermark:
            record.watermark === null
              ? null
              : record.channelId === ''
                ? memories.floor(record.watermark)
                : messages.floor(record.watermark),
          lastRunAt: record.lastRunAt,
          details: record.details,
        });
        break;
      case 'ingestFile':
        await queue('ingestFile', number, {
          path: record.path,
          line: record.line,
          prefixSha256: record.prefixSha256,
          updatedAt: record.updatedAt,
        });
        break;
      case 'idempotencyKey':
        await queue('idempotencyKey', number, {
          principal: record.principal,
          key: record.key,
          requestSha256: record.requestSha256,
          status: record.status,
          expiresAt: record.expiresAt,
        });
        break;
    }
  }
  await flush();
  if (ended === null) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      'the file has no end line: it was cut off (or is not a whole export); nothing was imported',
    );
  }
  if (ended !== records) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `the end line counts ${ended} records but the file holds ${records}: it is damaged; nothing was imported`,
    );
  }
  const fixes = references.map((pending) => {
    const resolve = (id: number) => {
      const mapped = memories.get(id);
      if (mapped === undefined)
        throw lineError(pending.line, new Error(`memory ${id} is named but the file does not hold it`));
      return mapped;
    };
    return {
      id: memories.get(pending.id) ?? 0,
      supersededBy: pending.supersededBy === null ? null : resolve(pending.supersededBy),
      sourceIds: pending.sourceIds.map(resolve),
    };
  });
  const outside = audience.checkChannelMembers() ?? audience.checkPersonalMemories();
  if (outside !== null) throw lineError(outside.line, outside.error);
  await session.setSupersededBy(
    fixes.flatMap((fix) => (fix.supersededBy === null ? [] : [[fix.id, fix.supersededBy] as const])),
  );
  await session.setSourceIds(fixes.map((fix) => [fix.id, fix.sourceIds] as const));
  // The file's memories are checked against the channels they cite, as an audience change checks them (ADR 5,
  // 2026-12-03): an export of a database where a channel was narrowed before those checks holds memories wider
  // than it. One mark a channel, written here, checked by `recheckAudiences` after the commit (or by the next
  // `maintain`, if this process dies first).
  const audienceMarks = [...latestOfChannel.keys()].map(
    (channelId): MaintenanceState => ({
      channelId: `${AUDIENCE_TASK}:${randomUUID()}`,
      task: AUDIENCE_TASK,
      watermark: null,
      lastRunAt: null,
      details: { change: { channelId } },
    }),
  );
  await session.setWatermarks([
    ...(watermarks.length > 0 ? watermarks : caughtUp(latestOfChannel, latestOfTopic)),
    ...audienceMarks,
  ]);
  // A database that required API keys restores into one that does: the keys are not exported, and a
  // service that never had one answers every caller as an administrator (users' old keys included).
  if (header.apiKeys === true) await session.requireApiKeys(context.clock.now());
  report.apiKeysRequired = header.apiKeys === true;
  await session.replacePolicy(
    policies.length > 0
      ? policies
      : [
          {
            version: 1,
            preset: header.preset,
            overrides: header.overrides,
            change: `imported from ${header.user === null ? 'an export' : `the export of user ${header.user}`} made ${new Date(header.exportedAt).toISOString()}`,
            actor: null,
            createdAt: context.clock.now(),
          },
        ],
  );
  return report;
}

/**
 * Watermarks for a file that has none (a per-user export): every imported message counts as
 * extracted, so extraction does not write again the memories the file brought.
 */
function caughtUp(channels: ReadonlyMap<string, number>, topics: ReadonlyMap<string, number>): MaintenanceState[] {
  const state = (channelId: string, task: string, watermark: number): MaintenanceState => ({
    channelId,
    task,
    watermark,
    lastRunAt: null,
    details: null,
  });
  return [
    ...[...channels].flatMap(([channel, id]) => [
      state(channel, ExtractionTask.channel, id),
      state(channel, 'episodes', id),
    ]),
    ...[...topics].flatMap(([topic, id]) => [
      state(topicKey(topic), ExtractionTask.conversation, id),
      state(topicKey(topic), ExtractionTask.work, id),
    ]),
  ];
}

function isEnd(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'end';
}

function plural(type: RecordType): string {
  return type === 'policy' ? 'policies' : `${type}s`;
}

/** Refuses a record naming a row the file does not hold before it (memories may name later memories). */
/**
 * Refuses a record that makes one of mneme's own actors a user (ADR 38), as every other face refuses it: a user row (a
 * display name), a membership, a message under it whose role is not assistant, a personal memory of it.
 */
function checkPersons(record: ParsedRecord): void {
  switch (record.type) {
    case 'user':
      if (isReservedId(record.id)) throw new Error(reservedIdMessage('user', record.id));
      return;
    case 'membership':
      if (isReservedId(record.userId)) throw new Error(reservedIdMessage('the member', record.userId));
      return;
    case 'message':
      if (record.role !== 'assistant' && isReservedId(record.senderId)) {
        throw new Error(`${reservedIdMessage('the sender', record.senderId)} (it sends only assistant replies)`);
      }
      return;
    case 'memory':
      if (record.scope === 'personal' && record.userId !== null && isReservedId(record.userId)) {
        throw new Error(reservedIdMessage('the user of a personal memory', record.userId));
      }
      return;
    default:
      return;
  }
}

function checkReferences(
  record: ParsedRecord,
  known: {
    messages: IdMap;
    projects: ReadonlySet<string>;
    topics: ReadonlySet<string>;
    channels: ReadonlySet<string>;
    queuedMessages: ReadonlySet<number>;
    lastMessage: number;
    lastMemory: number;
  },
): void {
  const message = (id: number, what: string) => {
    if (known.messages.get(id) === undefined && !known.queuedMessages.has(id)) {
      throw new Error(`${what} names message ${id}, which is not earlier in the file`);
    }
  };
  switch (record.type) {
    case 'topic':
      if (record.projectId !== null && !known.projects.has(record.projectId)) {
        throw new Error(`topic ${record.id} names project ${record.projectId}, which is not earlier in the file`);
      }
      return;
    case 'membership': {
      // A member of a space the file does not hold would be planted unseen (no listing shows a space that does not
      // exist) and read it once an administrator declared it without naming its members. A channel never declared
      // (written in only) has no record: its members are checked against its messages once they are in.
      if (record.kind === 'channel') return;
      const spaces = { topic: known.topics, project: known.projects }[record.kind];
      if (!spaces.has(record.spaceId)) {
        throw new Error(
          `the membership of ${record.userId} names ${record.kind} ${record.spaceId}, which is not earlier in the file`,
        );
      }
      return;
    }
    case 'message':
      if (record.id <= known.lastMessage) {
        throw new Error(`message ids must increase (${record.id} does not)`);
      }
      if (record.topicId !== null && !known.topics.has(record.topicId)) {
        throw new Error(`message ${record.id} names topic ${record.topicId}, which is not earlier in the file`);
      }
      if (record.replyTo !== null) message(record.replyTo, 'replyTo');
      return;
    case 'memory':
      if (record.id <= known.lastMemory) throw new Error(`memory ids must increase (${record.id} does not)`);
      if (record.topicId !== null && !known.topics.has(record.topicId)) {
        throw new Error(`the memory names topic ${record.topicId}, which is not earlier in the file`);
      }
      // A memory names its project for the project's lists and filters ("as if it came from there") and, in project
      // scope, for its audience: a project that does not exist would be planted unseen, as a membership of one would.
      if (record.projectId !== null && !known.projects.has(record.projectId)) {
        throw new Error(`the memory names project ${record.projectId}, which is not earlier in the file`);
      }
      ownerKey(record.scope, record);
      for (const id of record.sourceMessageIds) message(id, 'sourceMessageIds');
      if (record.searchContextMessageId !== null) message(record.searchContextMessageId, 'searchContextMessageId');
      if (record.chunk) message(record.chunk.messageId, 'chunk');
      return;
    default:
      return;
  }
}

/**
 * Refuses a record whose row an earlier record of the file wrote: a second user, project, topic or channel of an id, a
 * membership, policy version, link or watermark twice, a memory version number twice in one memory. A store refused
 * some of them as a failure of the database (exit 7, its own words) and kept others once, the first or the last (a
 * watermark set back re-extracted what the file's memories hold).
 */
function checkOnce(record: ParsedRecord, keys: Set<string>): void {
  let key: string;
  let what: string;
  switch (record.type) {
    case 'policy':
      [key, what] = [String(record.version), `policy version ${record.version}`];
      break;
    case 'user':
    case 'project':
    case 'topic':
    case 'channel':
      [key, what] = [record.id, `${record.type} ${record.id}`];
      break;
    case 'membership':
      [key, what] = [
        JSON.stringify([record.kind, record.spaceId, record.userId]),
        `the membership of ${record.userId} in ${record.kind} ${record.spaceId}`,
      ];
      break;
    case 'link':
      [key, what] = [
        JSON.stringify([record.sourceId, record.targetId, record.linkType]),
        `the ${record.linkType} link from memory ${record.sourceId} to ${record.targetId}`,
      ];
      break;
    case 'watermark':
      [key, what] = [
        JSON.stringify([record.channelId, record.task]),
        `the ${record.task} watermark of '${record.channelId}'`,
      ];
      break;
    case 'idempotencyKey':
      [key, what] = [
        JSON.stringify([record.principal, record.key]),
        `Idempotency-Key ${record.key} of ${record.principal}`,
      ];
      break;
    case 'memory': {
      const numbers = new Set<number>();
      for (const version of record.versions) {
        if (numbers.has(version.version)) throw new Error(`the memory holds its version ${version.version} twice`);
        numbers.add(version.version);
      }
      return;
    }
    default:
      return;
  }
  if (keys.has(key)) throw new Error(`a second record of ${what}: the file holds each row once`);
  keys.add(key);
}

/**
 * Refuses an `ingestFile` record a file may not hold: in a version 1 file (the record came with version 2), in a
 * user's export (the records describe the whole database's files: one user's data imported elsewhere must not make
 * that database skip lines), or for a path an earlier record of the file named.
 */
function checkIngestFile(
  record: Extract<ParsedRecord, { type: 'ingestFile' }>,
  header: { version: number; user: string | null },
  paths: Set<string>,
): void {
  if (header.version < 2) {
    throw new Error(`an ingestFile record in a version ${header.version} file: the record came with version 2`);
  }
  if (header.user !== null) {
    throw new Error(
      `an ingestFile record in the export of user ${header.user}: only an export of the whole database carries them`,
    );
  }
  if (paths.has(record.path)) throw new Error(`a second ingestFile record for ${record.path}`);
  paths.add(record.path);
}

/**
 * Refuses an `idempotencyKey` record in a file before version 3 (the record came with it) or in a user's export (the
 * keys name every user's requests; a user's data imported elsewhere must not refuse that database's own requests).
 */
function checkIdempotencyKeyRecord(header: { version: number; user: string | null }): void {
  if (header.version < 3) {
    throw new Error(`an idempotencyKey record in a version ${header.version} file: the record came with version 3`);
  }
  if (header.user !== null) {
    throw new Error(
      `an idempotencyKey record in the export of user ${header.user}: only an export of the whole database carries them`,
    );
  }
}

/**
 * Refuses a user record's `leftNames` (ADR 44) that mneme would not have written: in a file before version 4 (the field
 * came with it), in a user's export for another user (an export carries its user's own only: another's would label
 * the mentions of a name in that user's memories as theirs), a name twice, a name no rename leaves (one that cannot
 * stand unlabelled before a colon, or reads as the user's id), or one left after the file was written or after now (a
 * left name labels the memories of messages sent up to when it was left: a time to come would label every one written
 * until then; the header's time is the file's own word, so now bounds it too).
 */
function checkLeftNames(
  record: ParsedUserRecord,
  header: { version: number; user: string | null; exportedAt: number },
  now: number,
): void {
  const { leftNames } = record;
  if (leftNames === undefined) return;
  if (header.version < LEFT_NAMES_VERSION) {
    throw new Error(
      `the leftNames of user ${record.id} in a version ${header.version} file: the field came with version ${LEFT_NAMES_VERSION}`,
    );
  }
  if (header.user !== null && record.id !== header.user) {
    throw new Error(
      `the leftNames of user ${record.id} in the export of user ${header.user}: a user's export carries their own only`,
    );
  }
  const names = new Set<string>();
  for (const left of leftNames) {
    if (names.has(left.name)) throw new Error(`user ${record.id} left ${JSON.stringify(left.name)} twice in leftNames`);
    names.add(left.name);
    if (leftName(record.id, left.name, null).length === 0) {
      throw new Error(
        `user ${record.id} cannot have left ${JSON.stringify(left.name)}: a rename leaves only a name that stands ` +
          'unlabelled (no colon, brackets, line breaks or invisible characters) and does not read as their id',
      );
    }
    // The header's time is the file's word too: a name is not left after this machine's now either.
    if (left.at > Math.min(header.exportedAt, now)) {
      throw new Error(
        `user ${record.id} left ${JSON.stringify(left.name)} at ${new Date(left.at).toISOString()}, after the file ` +
          `was written (${new Date(header.exportedAt).toISOString()}) or after now (${new Date(now).toISOString()})`,
      );
    }
  }
}

/**
 * Refuses, in the export of user `user`, a record of another user's that such an export never holds: their membership,
 * a personal memory of theirs, a global memory that does not carry `user`. Imported, it would plant in the new
 * database what another user reads as their own (a personal memory in their recall, a membership of a space).
 */
function checkOwnRecord(record: ParsedRecord, user: string): void {
  if (record.type === 'membership' && record.userId !== user) {
    throw new Error(
      `the membership of ${record.userId} in the export of user ${user}: a user's export holds their own memberships only`,
    );
  }
  if (record.type !== 'memory') return;
  if (record.scope === 'personal' && record.userId !== user) {
    throw new Error(
      `a personal memory of ${record.userId} in the export of user ${user}: a user's export holds their own personal memories only`,
    );
  }
  if (record.scope === 'global' && record.userId !== user) {
    throw new Error(
      `a global memory of ${record.userId ?? 'nobody'} in the export of user ${user}: a user's export holds the global memories that carry their id only`,
    );
  }
}

/** A memory record as the store writes it: message ids remapped, owner key computed, memory references set later when forward. */
function importedMemory(record: ParsedMemoryRecord, messages: IdMap): ImportedMemory {
  const message = (id: number) => messages.get(id) ?? 0;
  return {
    content: record.content,
    category: record.category,
    sector: record.sector,
    scope: record.scope,
    owner: ownerKey(record.scope, record),
    userId: record.userId,
    channelId: record.channelId,
    projectId: record.projectId,
    topicId: record.topicId,
    source: record.source,
    importance: record.importance,
    strength: record.strength,
    salience: record.salience,
    accessCount: record.accessCount,
    lastAccessedAt: record.lastAccessedAt,
    pinned: record.pinned,
    sourceMessageIds: record.sourceMessageIds.map(message),
    sourceIds: [],
    validFrom: record.validFrom,
    archivedAt: record.archivedAt,
    fadedAt: record.fadedAt,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    decayedAt: record.decayedAt,
    searchContext: record.searchContext,
    searchContextMessageId: record.searchContextMessageId === null ? null : message(record.searchContextMessageId),
    chunkMessageId: record.chunk ? message(record.chunk.messageId) : null,
    chunkIndex: record.chunk?.index ?? null,
  };
}
