import { createMneme } from '../src/config/create-mneme.js';
import { isMnemeError } from '../src/core/errors.js';
import type { Mneme } from '../src/core/mneme.js';
import type { Memory } from '../src/core/types.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import type { Channel } from '../src/storage/membership-store.js';
import type { Message } from '../src/storage/message-store.js';
import { createFixedClock } from '../src/testing.js';

/**
 * A store with two users: B (`bob`) has distinctive content in every place a memory can come from,
 * A (`ann`) has her own; A attacks, B is attacked. Every secret of B carries a canary word naming its
 * place (`zanzibar-b-<place>`), so a leak says where it came from.
 */
export const A = {
  user: 'ann',
  dm: 'dm-ann',
  room: 'room-ann',
  topic: 'topic-ann',
  project: 'proj-ann',
} as const;
export const B = {
  user: 'bob',
  dm: 'dm-bob',
  room: 'room-bob',
  topic: 'topic-bob',
  project: 'proj-bob',
} as const;
/** A public channel both read and write in: what is said there A may read. */
export const PUBLIC_ROOM = 'room-public';
/** A third user, in B's private room and A's room. */
export const CAROL = 'carol';
export const CHANNELS = [A.dm, A.room, B.dm, B.room, PUBLIC_ROOM] as const;
/** The owner keys of A's spaces: where A may write. */
export const A_OWNERS = [`user:${A.user}`, `room:${A.dm}`, `room:${A.room}`, `room:${PUBLIC_ROOM}`] as const;

/** The sentence the offline extractor used to turn into a global memory. */
export const PASSWORD_SENTENCE = 'The production postgres database password is hunter2 on the primary server';

const CANARY = /zanzibar-b-[a-z0-9-]+|hunter2/gi;

/** Every canary of B in a text (the canary names the place it came from), or [] when none is there. */
export function canariesIn(text: string): string[] {
  return [...new Set(text.match(CANARY) ?? [])].map((canary) => canary.toLowerCase());
}

export const START = '2024-06-15T12:00:00.000Z';
const at = (hhmm: string) => `2024-06-15T${hhmm}:00.000Z`;

export interface World {
  mneme: Mneme;
  app: ReturnType<typeof createHttpApp>;
  clock: ReturnType<typeof createFixedClock>;
  keys: { admin: string; a: string; b: string };
  /** Every request of a test goes through here: the response's status and text, read once. */
  send(
    key: string | null,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; text: string; contentType: string | null }>;
  /** B's memories: one per source, scope and archive state found in the seeded store. */
  bMemories: Memory[];
  /** A's own personal memory. */
  aMemory: Memory;
  /** Ids of messages B said in B's DM. */
  bMessages: number[];
  /** Ids of messages A said in A's room. */
  aMessages: number[];
  errors: unknown[];
}

/**
 * Where a world is stored: `path` gives a new, empty database each call (SQLite `:memory:`, a new
 * PGlite, a new database of a PostgreSQL server). `vectors` says whether it searches vectors
 * (PostgreSQL 15 from Debian has no pgvector: the fake embedding model's vectors are not searched).
 */
export interface WorldStore {
  name: string;
  path(): Promise<string>;
  vectors: boolean;
}

/** SQLite `:memory:`: the store the attack first ran on. */
export const sqliteStore: WorldStore = { name: 'SQLite', path: async () => ':memory:', vectors: true };

/**
 * Opens a store (SQLite `:memory:` unless another is given), with the fake embedding model (so the
 * vector leg runs where the store has one) and a fixed clock.
 */
export async function openWorld(
  store: WorldStore = sqliteStore,
): Promise<Omit<World, 'bMemories' | 'aMemory' | 'bMessages' | 'aMessages'>> {
  const opened = await reopenWorld(await store.path());
  const admin = await opened.mneme.apiKeys.create({ label: 'ops' });
  const a = await opened.mneme.apiKeys.create({ label: 'ann-app', userId: A.user });
  const b = await opened.mneme.apiKeys.create({ label: 'bob-app', userId: B.user });
  return { ...opened, keys: { admin: admin.key, a: a.key, b: b.key } };
}

/**
 * Opens a world's database again (a copy of it, or the same one from another process), with the
 * same fake embedding model and clock, and the HTTP face over it (the keys it holds are the caller's).
 */
export async function reopenWorld(
  path: string,
): Promise<Omit<World, 'bMemories' | 'aMemory' | 'bMessages' | 'aMessages' | 'keys'>> {
  const clock = createFixedClock(START);
  const mneme = await createMneme({
    path,
    embedder: createFakeEmbeddingModel(),
    clock,
    logger: { warn: () => {}, info: () => {} },
  });
  const errors: unknown[] = [];
  const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: (error) => errors.push(error) });
  const send: World['send'] = async (key, method, path, body) => {
    const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await app.request(path, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, text: await response.text(), contentType: response.headers.get('content-type') };
  };
  return { mneme, app, clock, send, errors };
}

/**
 * Seeds the world through the administrator key: channels, topics and projects with members,
 * conversations spread over three hours (so maintenance writes episodes), manual memories of every
 * scope (near-duplicates, so consolidation writes merges), extraction of B's topic and work session,
 * then maintenance.
 */
export async function seedWorld(store: WorldStore = sqliteStore): Promise<World> {
  const world = await openWorld(store);
  const { mneme, send, keys } = world;
  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await send(keys.admin, method, path, body);
    if (response.status >= 300)
      throw new Error(`seeding ${method} ${path} failed: ${response.status} ${response.text}`);
    return JSON.parse(response.text) as unknown;
  };

  await admin('PUT', `/api/channels/${B.dm}`, { visibility: 'direct', members: [B.user] });
  await admin('PUT', `/api/channels/${B.room}`, { visibility: 'private', members: [B.user, CAROL] });
  await admin('PUT', `/api/channels/${PUBLIC_ROOM}`, { visibility: 'public', members: [A.user, B.user] });
  await admin('PUT', `/api/channels/${A.dm}`, { visibility: 'direct', members: [A.user] });
  await admin('PUT', `/api/channels/${A.room}`, { visibility: 'private', members: [A.user, CAROL] });
  await admin('POST', '/api/projects', { id: B.project, name: 'Bob launch', managed: true, members: [B.user] });
  await admin('POST', '/api/projects', { id: A.project, name: 'Ann launch', managed: true, members: [A.user] });
  await admin('POST', '/api/topics', { id: B.topic, projectId: B.project, title: 'Bob plans', members: [B.user] });
  await admin('POST', '/api/topics', { id: A.topic, projectId: A.project, title: 'Ann plans', members: [A.user] });
  await admin('PUT', `/api/users/${B.user}`, { displayName: 'Bob' });
  await admin('PUT', `/api/users/${A.user}`, { displayName: 'Ann' });
  await admin('PUT', `/api/users/${CAROL}`, { displayName: 'Carol' });

  const bDm: Array<[string, string, string]> = [
    ['09:00', 'I prefer zanzibar-b-dm-tea over coffee every single morning', 'Noted, zanzibar-b-dm-reply tea it is.'],
    ['09:30', 'My sister lives in zanzibar-b-dm-city and I visit her every winter', 'That sounds lovely.'],
    ['10:00', PASSWORD_SENTENCE, 'I will keep that in mind.'],
    ['10:30', 'I always park at the zanzibar-b-dm-garage before work', 'Good to know.'],
    ['11:00', 'My doctor appointment at zanzibar-b-dm-clinic is next Tuesday', 'I hope it goes well.'],
    ['11:30', 'I never eat zanzibar-b-dm-fruit because I am allergic to it', 'I will remember that.'],
  ];
  const bMessages: number[] = [];
  for (const [time, userMessage, assistantReply] of bDm) {
    const result = (await admin('POST', '/api/exchanges', {
      channelId: B.dm,
      userId: B.user,
      userMessage,
      assistantReply,
      createdAt: at(time),
    })) as { messages: Message[] };
    bMessages.push(...result.messages.filter((message) => message.role === 'user').map((message) => message.id));
  }
  const bRoom: Array<[string, string, string]> = [
    ['09:00', B.user, 'We always deploy the zanzibar-b-room-service on Tuesdays after the standup'],
    ['09:10', CAROL, 'Our team keeps the zanzibar-b-room-runbook in the shared drive for everyone'],
    ['09:20', B.user, 'I prefer to review the zanzibar-b-room-release notes before lunch'],
    ['09:40', CAROL, 'We moved the zanzibar-b-room-standup to nine thirty for the whole team'],
    ['10:00', B.user, 'Our team decided the zanzibar-b-room-budget stays under ten thousand'],
    ['10:10', CAROL, 'I always backup the zanzibar-b-room-ledger every Friday evening'],
    ['10:20', B.user, 'We agreed the zanzibar-b-room-vendor contract ends in September'],
    ['10:40', CAROL, 'This room tracks the zanzibar-b-room-incident from last week'],
  ];
  for (const [time, sender, content] of bRoom) {
    await admin('POST', '/api/messages', { channelId: B.room, sender, content, createdAt: at(time) });
  }
  const bTopic = [
    'I prefer to ship the zanzibar-b-topic-beta to ten customers first',
    'We always write the zanzibar-b-topic-changelog before the release',
    'My plan is to finish the zanzibar-b-topic-migration by Friday',
    'I decided the zanzibar-b-topic-pricing page goes live in July',
  ];
  for (const [index, content] of bTopic.entries()) {
    await admin('POST', '/api/messages', {
      channelId: B.room,
      sender: B.user,
      topicId: B.topic,
      content,
      createdAt: at(`11:${10 + index * 10}`),
    });
  }
  const publicRoom: Array<[string, string, string]> = [
    ['09:00', B.user, 'I prefer the public-ok-lunch on Fridays with everyone'],
    ['09:20', A.user, 'I always bring the public-ok-cake on birthdays'],
    ['09:40', B.user, 'We meet at the public-ok-cafe downstairs every Monday'],
    ['10:10', A.user, 'I like the public-ok-garden behind the office'],
  ];
  for (const [time, sender, content] of publicRoom) {
    await admin('POST', '/api/messages', { channelId: PUBLIC_ROOM, sender, content, createdAt: at(time) });
  }
  const aMessages: number[] = [];
  for (const [time, content] of [
    ['09:00', 'I prefer ann-own-jasmine tea in the afternoon'],
    ['09:30', 'We always water the ann-own-plants on Mondays'],
  ]) {
    const result = (await admin('POST', '/api/messages', {
      channelId: A.room,
      sender: A.user,
      content,
      createdAt: at(time as string),
    })) as { messages: Message[] };
    aMessages.push(...result.messages.map((message) => message.id));
  }
  await admin('POST', '/api/exchanges', {
    channelId: A.dm,
    userId: A.user,
    userMessage: 'My brother lives in ann-own-lisbon and I call him on Sundays',
    assistantReply: 'How nice.',
    createdAt: at('09:00'),
  });

  const manual = [
    { content: 'Bob keeps the zanzibar-b-personal-key under the blue vase in the hallway', scope: 'personal' },
    { content: 'Bob keeps the zanzibar-b-personal-key under the blue vase', scope: 'personal' },
    { content: 'Bob keeps his zanzibar-b-pinned-pin code in the red notebook', scope: 'personal', pinned: true },
    { content: 'The zanzibar-b-roommem-code opens the back door of the office', scope: 'room', channelId: B.room },
    { content: 'The zanzibar-b-roommem-code opens the back door', scope: 'room', channelId: B.room },
    { content: 'The zanzibar-b-dmmem-note says Bob renews his passport in May', scope: 'room', channelId: B.dm },
    { content: 'The zanzibar-b-project-deadline for the launch is July', scope: 'project', projectId: B.project },
  ];
  for (const memory of manual) await admin('POST', '/api/memories', { userId: B.user, ...memory });
  const archived = (await admin('POST', '/api/memories', {
    content: 'Bob once hid the zanzibar-b-archived-note in the attic',
    scope: 'personal',
    userId: B.user,
  })) as Memory;
  await admin('DELETE', `/api/memories/${archived.id}`);
  await admin('POST', '/api/memories', { content: 'The office opens at eight on weekdays' });
  const aMemory = (await admin('POST', '/api/memories', {
    content: 'Ann keeps her ann-own-umbrella by the door',
    scope: 'personal',
    userId: A.user,
  })) as Memory;

  await mneme.whenIdle();
  await admin('POST', `/api/memories/extract/${B.topic}`);
  await admin('POST', `/api/memories/extract-work/${B.topic}`);
  await admin('POST', '/api/maintenance/run', { tasks: ['episodes', 'consolidate', 'link'] });
  await mneme.whenIdle();

  const every = await allMemories(mneme);
  const kinds = new Map<string, Memory>();
  for (const memory of every) {
    if (canariesIn(memory.content).length === 0) continue;
    const kind = `${memory.source}/${memory.scope}/${memory.channelId}/${memory.archivedAt === null ? 'active' : 'archived'}`;
    if (!kinds.has(kind)) kinds.set(kind, memory);
  }
  return { ...world, bMemories: [...kinds.values()], aMemory, bMessages, aMessages };
}

/** Every memory of the store, archived ones too, as the administrator lists them. */
export async function allMemories(mneme: Mneme): Promise<Memory[]> {
  const memories: Memory[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await mneme.list({ archived: 'include', limit: 500, offset });
    memories.push(...page.memories);
    if (offset + 500 >= page.total) return memories;
  }
}

/** What the administrator sees of the store: every memory, the channels' last messages and members, what A may name. */
export interface Snapshot {
  memories: Map<number, Memory>;
  messages: Map<string, Message[]>;
  channels: Map<string, Channel>;
  messageCount: number;
  /** The spaces of B that A was refused when naming them: all of them, unless membership leaked. */
  refusedToA: string[];
}

const bSpaces = [{ channelId: B.dm }, { channelId: B.room }, { topicId: B.topic }, { projectId: B.project }] as const;

export async function snapshot(mneme: Mneme): Promise<Snapshot> {
  const messages = new Map<string, Message[]>();
  const channels = new Map<string, Channel>();
  for (const channelId of CHANNELS) {
    messages.set(channelId, await mneme.turns({ channelId, count: 50 }));
    channels.set(channelId, await mneme.channel(channelId));
  }
  const asA = mneme.as({ kind: 'user', userId: A.user, label: 'probe' });
  const refusedToA: string[] = [];
  for (const viewer of bSpaces) {
    try {
      await asA.list({ viewer, limit: 1 });
    } catch (error) {
      if (isMnemeError(error, 'FORBIDDEN')) refusedToA.push(Object.values(viewer).join());
    }
  }
  return {
    memories: new Map((await allMemories(mneme)).map((memory) => [memory.id, memory])),
    messages,
    channels,
    messageCount: (await mneme.stats()).messages,
    refusedToA,
  };
}

/** Fields a recall of a memory changes (reinforcement): A may touch what A may see. */
const touchFields = ['accessCount', 'lastAccessedAt', 'strength', 'salience', 'updatedAt'] as const;

function ownerOf(memory: Memory): string {
  if (memory.scope === 'global') return 'global';
  if (memory.scope === 'personal') return `user:${memory.userId}`;
  if (memory.scope === 'room') return `room:${memory.channelId}`;
  if (memory.scope === 'project') return `project:${memory.projectId}`;
  return `topic:${memory.topicId}`;
}

/** Whether A may see the memory: global, A's own spaces, the public room, A's topic and project. */
function visibleToA(memory: Memory): boolean {
  const owner = ownerOf(memory);
  return (
    owner === 'global' ||
    (A_OWNERS as readonly string[]).includes(owner) ||
    owner === `topic:${A.topic}` ||
    owner === `project:${A.project}`
  );
}

/** A's own: written by A in A's spaces. */
function isAs(memory: Memory): boolean {
  return memory.userId === A.user && visibleToA(memory) && memory.scope !== 'global';
}

function without(memory: Memory, fields: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(memory).filter(([key]) => !fields.includes(key)));
}

/**
 * What changed between two snapshots that A may not change: any memory A did not write (B's
 * exactly, including its access count, since touching it means a recall of A found it; what A
 * may see up to reinforcement), a new memory that is not A's in A's spaces (a global one only by
 * extraction from the public room), a message of B's channels, a new message not by A as a user,
 * a channel's visibility or members, or A gaining a space of B's.
 */
export function violations(before: Snapshot, after: Snapshot): string[] {
  const found: string[] = [];
  for (const [id, old] of before.memories) {
    const now = after.memories.get(id);
    if (!now) {
      found.push(`memory ${id} (${old.content}) was deleted`);
      continue;
    }
    if (isAs(old)) continue;
    const ignored = visibleToA(old) ? touchFields : [];
    if (JSON.stringify(without(old, ignored)) !== JSON.stringify(without(now, ignored))) {
      found.push(`memory ${id} changed: ${JSON.stringify(old)} -> ${JSON.stringify(now)}`);
    }
  }
  for (const [id, memory] of after.memories) {
    if (before.memories.has(id)) continue;
    const fromPublicRoom =
      memory.scope === 'global' && memory.source === 'extraction' && memory.channelId === PUBLIC_ROOM;
    if (memory.userId !== A.user || !(isAs(memory) || fromPublicRoom)) {
      found.push(`new memory ${id} is not A's own: ${JSON.stringify(memory)}`);
    }
  }
  let newMessages = 0;
  for (const [channelId, messages] of after.messages) {
    const old = new Map((before.messages.get(channelId) ?? []).map((message) => [message.id, message]));
    const newestOld = Math.max(0, ...old.keys());
    const kept = new Set(messages.map((message) => message.id));
    const floor = Math.min(...kept);
    for (const [id, message] of old) {
      if (id >= floor && !kept.has(id)) found.push(`message ${id} of ${channelId} disappeared`);
      const now = messages.find((candidate) => candidate.id === id);
      if (now && JSON.stringify(now) !== JSON.stringify(message)) found.push(`message ${id} changed`);
    }
    for (const message of messages.filter((candidate) => candidate.id > newestOld)) {
      newMessages++;
      const isAsPost = message.senderId === A.user && message.role === 'user';
      if (!isAsPost || channelId === B.dm || channelId === B.room) {
        found.push(`new message in ${channelId}: ${JSON.stringify(message)}`);
      }
    }
  }
  if (after.messageCount !== before.messageCount + newMessages) {
    found.push(
      `${after.messageCount - before.messageCount} messages appeared, ${newMessages} of them A's in A's channels`,
    );
  }
  for (const [channelId, channel] of before.channels) {
    if (JSON.stringify(channel) !== JSON.stringify(after.channels.get(channelId))) {
      found.push(`channel ${channelId} changed: ${JSON.stringify(after.channels.get(channelId))}`);
    }
  }
  if (JSON.stringify(before.refusedToA) !== JSON.stringify(after.refusedToA)) {
    found.push(`A may now name ${before.refusedToA.filter((space) => !after.refusedToA.includes(space)).join(', ')}`);
  }
  return found;
}

/** The canaries Carol said in B's room: hers, not B's, so a purge of B keeps them. */
export async function carolsCanaries(mneme: Mneme): Promise<Set<string>> {
  return new Set(
    (await mneme.turns({ channelId: B.room, count: 50 }))
      .filter((message) => message.senderId === CAROL)
      .flatMap((message) => canariesIn(message.content)),
  );
}
