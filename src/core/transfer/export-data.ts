import type { PolicyVersion } from '../../storage/policy-store.js';
import type {
  TransferFilter,
  TransferIdempotencyKey,
  TransferMemory,
  TransferReads,
} from '../../storage/transfer-store.js';
import { type AccessView, accessOf, everyAccess } from '../access-view.js';
import { toIso } from '../clock.js';
import type { EngineContext } from '../engine-context.js';
import { parseInput, UserIdSchema } from '../schemas.js';
import { ownerKey } from '../scope.js';
import type { MemoryVersion } from '../types.js';
import {
  EXPORT_FORMAT,
  type ExportHeader,
  type ExportRecord,
  FIRST_EXPORT_FORMAT_VERSION,
  IDEMPOTENCY_KEY_VERSION,
  INGEST_FILE_VERSION,
  LEFT_NAMES_VERSION,
} from './export-format.js';

/** What `exportData` writes. */
export interface ExportOptions {
  /**
   * Only what this user may see and what they said (a data-subject access request; see
   * docs/export-format.md): left out, everything.
   */
  userId?: string;
  /** The mneme version written in the header; left out, the engine's (`createMneme`: the package's). */
  mnemeVersion?: string;
}

/** Rows read per query: no export holds more than a page of any table in memory. */
const PAGE = 500;

const iso = (time: number | null) => (time === null ? null : toIso(time));

/**
 * The export as JSON lines (without their newlines), streamed: the header, every record in the
 * order of the format, then the end line with the number of records. Every id a record names is the
 * id of a row the same file holds (a reference to anything the export leaves out is dropped), so
 * `importData` can restore it as it is.
 */
export async function* exportData(context: EngineContext, options: ExportOptions = {}): AsyncGenerator<string> {
  const { storage } = context;
  const userId = options.userId === undefined ? undefined : parseInput(UserIdSchema, options.userId, 'user id');
  // What other stores hold, read before the snapshot opens: on PGlite (one connection) a read outside the
  // snapshot's transaction would wait for it.
  const policy = await storage.policy.current();
  const policies = userId === undefined ? await storage.policy.history() : [];
  const apiKeys = await storage.apiKeys.everCreated();
  // Every other read sees one snapshot (ADR 31): a message extracted, a merge or a link written while the export
  // runs is in the file with the watermark that counts it, or neither is.
  const transfer = await storage.transfer.snapshot();
  try {
    yield* exportRecords(context, transfer, { userId, policy, policies, apiKeys, version: options.mnemeVersion });
  } finally {
    await transfer.close();
  }
}

/** The export's lines, every row read from `transfer`. */
async function* exportRecords(
  context: EngineContext,
  transfer: TransferReads,
  read: {
    userId: string | undefined;
    policy: PolicyVersion | null;
    policies: readonly PolicyVersion[];
    apiKeys: boolean;
    version: string | undefined;
  },
): AsyncGenerator<string> {
  const { userId, policy } = read;
  const filter = userId === undefined ? undefined : await filterOf(transfer, userId);
  // A user's export shows the retrievals of their own personal memories only: others' recalls touch the rest (ADR 52).
  const view = userId === undefined ? everyAccess : accessOf(userId);
  // How far `mneme ingest` got in each file, and the background tasks' watermarks (full export only: the records
  // name the whole database's files, and a user's export imported elsewhere must not make that database skip
  // lines). Read before the horizon: where the store has no snapshot (PGlite), a record or a watermark is committed
  // with the rows of the work it counts, so the file holds every row they count (work done after them is done again).
  const ingestFiles = filter ? [] : await transfer.ingestFiles();
  const watermarks = filter ? [] : await transfer.watermarks();
  // The idempotency keys whose work was done (ADR 37; full export only: they name every user's requests), read before
  // the horizon for the same reason: a key counts work committed before it.
  const idempotencyKeys = filter ? [] : await allIdempotencyKeys(transfer, context.clock.now());
  // The names users left (ADR 44): a user's export carries their own only (another's earlier names are not theirs to
  // see, and an import refuses them there).
  const leftNames = await transfer.hasLeftNames(userId === undefined ? undefined : [userId]);
  const horizon = await transfer.horizon();
  const referenced = filter ? await transfer.referencedBy(filter) : null;
  // A user's export names only the projects they are a member of: the project of a topic in one of their
  // channels may be another's, which nothing else shows them (a message shows its topic's id only).
  const projects = filter ? new Set(filter.projectIds) : null;
  // Likewise a topic's title: a message in one of their channels shows the topic's id only, and no face
  // shows a topic to a user who is not its member.
  const topics = filter ? new Set(filter.topicIds) : null;
  const projectIds = referenced?.projectIds.filter((id) => projects?.has(id));
  const header: ExportHeader = {
    type: 'header',
    format: EXPORT_FORMAT,
    // The oldest version that reads the file: a reader refuses a record type a later version added.
    version: leftNames
      ? LEFT_NAMES_VERSION
      : idempotencyKeys.length > 0
        ? IDEMPOTENCY_KEY_VERSION
        : ingestFiles.length > 0
          ? INGEST_FILE_VERSION
          : FIRST_EXPORT_FORMAT_VERSION,
    mneme: read.version ?? context.version ?? 'unknown',
    exportedAt: toIso(context.clock.now()),
    user: userId ?? null,
    preset: policy?.preset ?? 'mneme',
    overrides: policy?.overrides ?? {},
    apiKeys: read.apiKeys,
  };
  yield JSON.stringify(header);
  let records = 0;
  const line = (record: ExportRecord) => {
    records++;
    return JSON.stringify(record);
  };

  for (const version of read.policies) {
    yield line({ type: 'policy', ...version });
  }
  for await (const user of pages((after: string | null) => transfer.users(after, PAGE, referenced?.userIds), byId)) {
    const { leftNames: left, ...fields } = user;
    const kept = userId === undefined || user.id === userId ? left : [];
    yield line({
      type: 'user',
      ...fields,
      createdAt: toIso(user.createdAt),
      updatedAt: toIso(user.updatedAt),
      ...(kept.length === 0 ? {} : { leftNames: kept.map((name) => ({ name: name.name, at: toIso(name.at) })) }),
    });
  }
  for await (const project of pages((after: string | null) => transfer.projects(after, PAGE, projectIds), byId)) {
    yield line({ type: 'project', ...project, createdAt: toIso(project.createdAt) });
  }
  for await (const topic of pages((after: string | null) => transfer.topics(after, PAGE, referenced?.topicIds), byId)) {
    const projectId = projects && topic.projectId !== null && !projects.has(topic.projectId) ? null : topic.projectId;
    const title = topics && !topics.has(topic.id) ? null : topic.title;
    yield line({ type: 'topic', ...topic, projectId, title, createdAt: toIso(topic.createdAt) });
  }
  for await (const channel of pages(
    (after: string | null) => transfer.channels(after, PAGE, filter?.channelIds),
    byId,
  )) {
    yield line({
      type: 'channel',
      ...channel,
      createdAt: toIso(channel.createdAt),
      updatedAt: toIso(channel.updatedAt),
    });
  }
  for await (const member of pages(
    (after: Parameters<typeof transfer.memberships>[0]) => transfer.memberships(after, PAGE, userId),
    (last) => last,
  )) {
    yield line({ type: 'membership', ...member, addedAt: toIso(member.addedAt) });
  }
  for await (const message of pages((after: number) => transfer.messages(after, PAGE, filter), byNumber, 0)) {
    if (message.id > horizon.messageId) break;
    // A reply to a message the export leaves out would name a row the file does not hold.
    const replyTo =
      message.replyTo !== null &&
      (await exportedMessages(transfer, [message.replyTo], filter, horizon)).has(message.replyTo)
        ? message.replyTo
        : null;
    const { externalId, ...fields } = message;
    yield line({ type: 'message', ...fields, replyTo, ...(externalId === null ? {} : { externalId }) });
  }
  for await (const page of memoryPages(transfer, filter, horizon, view)) {
    for (const memory of page) yield line(memory);
  }
  for await (const link of pages((after: number) => transfer.links(after, PAGE, filter), byNumber, 0)) {
    if (link.id > horizon.linkId) break;
    if (link.sourceId > horizon.memoryId || link.targetId > horizon.memoryId) continue;
    yield line({
      type: 'link',
      sourceId: link.sourceId,
      targetId: link.targetId,
      linkType: link.type,
      strength: link.strength,
      createdAt: toIso(link.createdAt),
    });
  }
  for (const state of watermarks) {
    yield line({ type: 'watermark', ...state, lastRunAt: iso(state.lastRunAt) });
  }
  for (const file of ingestFiles) {
    yield line({ type: 'ingestFile', ...file, updatedAt: toIso(file.updatedAt) });
  }
  for (const key of idempotencyKeys) {
    yield line({ type: 'idempotencyKey', ...key, expiresAt: toIso(key.expiresAt) });
  }
  yield JSON.stringify({ type: 'end', records });
}

/** Every idempotency key a full export carries, a page at a time. */
async function allIdempotencyKeys(transfer: TransferReads, now: number): Promise<TransferIdempotencyKey[]> {
  const all: TransferIdempotencyKey[] = [];
  for (let after: TransferIdempotencyKey | null = null; ; ) {
    const page = await transfer.idempotencyKeys(after, PAGE, now);
    all.push(...page);
    if (page.length < PAGE) return all;
    after = page.at(-1) ?? null;
  }
}

const byId = (last: { id: string }) => last.id;
const byNumber = (last: { id: number }) => last.id;

/** Every row of a paged read, one page in memory at a time. */
async function* pages<Row, Key>(
  read: (after: Key) => Promise<Row[]>,
  keyOf: (last: Row) => Key,
  first: Key | null = null,
): AsyncGenerator<Row> {
  let after = first as Key;
  for (;;) {
    const rows = await read(after);
    yield* rows;
    const last = rows.at(-1);
    if (rows.length < PAGE || last === undefined) return;
    after = keyOf(last);
  }
}

/**
 * What one user may see, as owner keys and channels: their personal memories, the room, project and
 * session memories of the spaces they are a member of, and global memories that carry their id.
 */
async function filterOf(
  transfer: TransferReads,
  userId: string,
): Promise<TransferFilter & { projectIds: string[]; topicIds: string[] }> {
  const spaces = await transfer.spacesOf(userId);
  const owners = [ownerKey('personal', { userId })];
  const channelIds: string[] = [];
  const projectIds: string[] = [];
  const topicIds: string[] = [];
  for (const space of spaces) {
    if (space.kind === 'channel') {
      channelIds.push(space.id);
      owners.push(ownerKey('room', { channelId: space.id }));
    } else if (space.kind === 'project') {
      projectIds.push(space.id);
      owners.push(ownerKey('project', { projectId: space.id }));
    } else {
      topicIds.push(space.id);
      owners.push(ownerKey('session', { topicId: space.id }));
    }
  }
  return { userId, channelIds, owners, projectIds, topicIds };
}

/** The newest rows an export writes (`TransferStore.horizon`). */
type Horizon = Awaited<ReturnType<TransferReads['horizon']>>;

/** Of these message ids, those the export writes (up to the horizon: all that exist, or those the filter lets through). */
function exportedMessages(
  transfer: TransferReads,
  ids: readonly number[],
  filter: TransferFilter | undefined,
  horizon: Horizon,
): Promise<Set<number>> {
  return transfer.messageIds(
    [...new Set(ids)].filter((id) => id <= horizon.messageId),
    filter,
  );
}

/** Of these memory ids, those the export writes. */
function exportedMemories(
  transfer: TransferReads,
  ids: readonly number[],
  filter: TransferFilter | undefined,
  horizon: Horizon,
): Promise<Set<number>> {
  return transfer.memoryIds(
    [...new Set(ids)].filter((id) => id <= horizon.memoryId),
    filter,
  );
}

/** Memory records a page at a time: with their versions, and references only to rows the export writes. */
async function* memoryPages(
  transfer: TransferReads,
  filter: TransferFilter | undefined,
  horizon: Horizon,
  view: AccessView,
): AsyncGenerator<ExportRecord[]> {
  let after = 0;
  for (;;) {
    const page = await transfer.memories(after, PAGE, filter);
    const memories = page.filter((memory) => memory.id <= horizon.memoryId);
    if (memories.length === 0) return;
    after = memories.at(-1)?.id ?? after;
    const versions = new Map<number, MemoryVersion[]>();
    for (const version of await transfer.versions(memories.map((memory) => memory.id))) {
      const list = versions.get(version.memoryId) ?? [];
      list.push(version);
      versions.set(version.memoryId, list);
    }
    const messageIds = memories.flatMap((memory) => [
      ...memory.sourceMessageIds,
      ...(memory.searchContextMessageId === null ? [] : [memory.searchContextMessageId]),
      ...(memory.chunkMessageId === null ? [] : [memory.chunkMessageId]),
    ]);
    const memoryIds = memories.flatMap((memory) => [
      ...memory.sourceIds,
      ...(memory.supersededBy === null ? [] : [memory.supersededBy]),
    ]);
    const messages = await exportedMessages(transfer, messageIds, filter, horizon);
    const related = await exportedMemories(transfer, memoryIds, filter, horizon);
    yield memories.map((memory) => memoryRecord(view(memory), versions.get(memory.id) ?? [], messages, related));
    if (page.length < PAGE || memories.length < page.length) return;
  }
}

function memoryRecord(
  memory: TransferMemory,
  versions: readonly MemoryVersion[],
  messages: ReadonlySet<number>,
  memories: ReadonlySet<number>,
): ExportRecord {
  const { owner: _owner, chunkMessageId, chunkIndex, decayedAt, ...fields } = memory;
  const quoted = memory.searchContextMessageId;
  const keepsContext = quoted === null || messages.has(quoted);
  return {
    type: 'memory',
    ...fields,
    sourceMessageIds: memory.sourceMessageIds.filter((id) => messages.has(id)),
    sourceIds: memory.sourceIds.filter((id) => memories.has(id)),
    supersededBy: memory.supersededBy !== null && memories.has(memory.supersededBy) ? memory.supersededBy : null,
    decayedAt: iso(decayedAt),
    searchContext: keepsContext ? memory.searchContext : null,
    searchContextMessageId: keepsContext ? quoted : null,
    chunk:
      chunkMessageId !== null && chunkIndex !== null && messages.has(chunkMessageId)
        ? { messageId: chunkMessageId, index: chunkIndex }
        : null,
    versions: versions.map(({ id: _id, memoryId: _memoryId, ...version }) => version),
  };
}
