import type { SpaceKind } from '../storage/membership-store.js';
import type { Message } from '../storage/message-store.js';
import type { EngineContext } from './engine-context.js';
import { ErrorCode, MnemeError } from './errors.js';
import type { Viewer } from './types.js';

/** Who belongs where, as the engine asks it (ADR 5). */
export interface Membership {
  /** After ingest: the sender of each user message becomes a member of its channel, its topic and that topic's project. */
  learn(messages: readonly Message[]): Promise<void>;
  /** FORBIDDEN unless the user may read what the viewer names: a channel it is in (or a public one), its topics and projects. */
  assertMayView(userId: string, viewer: Viewer): Promise<void>;
  /** FORBIDDEN unless the user is a member of the space (`what` says what was attempted). */
  assertMember(kind: SpaceKind, id: string, userId: string, what: string): Promise<void>;
  /** Whether an administrator marked the channel public: only there may extraction write global memories. */
  isPublic(channelId: string): Promise<boolean>;
  /**
   * Whether everyone in the space may read the channel (it is public, or each member of the space is a
   * member of the channel): only then may a message of the channel become a memory of the space.
   */
  reaches(channelId: string, kind: SpaceKind, id: string): Promise<boolean>;
}

const spaceNames: Record<SpaceKind, string> = { channel: 'channel', topic: 'topic', project: 'project' };

export function createMembership(context: EngineContext): Membership {
  const { memberships, directory } = context.storage;

  async function isPublic(channelId: string): Promise<boolean> {
    return (await memberships.getChannel(channelId))?.visibility === 'public';
  }

  async function assertMember(kind: SpaceKind, id: string, userId: string, what: string): Promise<void> {
    if (await memberships.isMember(kind, id, userId)) return;
    throw new MnemeError(
      ErrorCode.Forbidden,
      `${what}: user ${userId} is not a member of ${spaceNames[kind]} ${id}; an administrator adds members`,
    );
  }

  return {
    async learn(messages) {
      const at = context.clock.now();
      const projects = new Map<string, string | null>();
      const known = new Set<string>();
      // A sender is usually a member already: a read, and a write only when they are not, one
      // transaction a space for every new member the messages bring to it (an import brings many).
      const missing = new Map<string, { kind: SpaceKind; id: string; userIds: string[] }>();
      const add = async (kind: SpaceKind, id: string, userId: string) => {
        const key = JSON.stringify([kind, id, userId]);
        if (known.has(key)) return;
        known.add(key);
        if (await memberships.isMember(kind, id, userId)) return;
        const space = JSON.stringify([kind, id]);
        const entry = missing.get(space) ?? { kind, id, userIds: [] };
        entry.userIds.push(userId);
        missing.set(space, entry);
      };
      for (const message of messages) {
        if (message.role !== 'user') continue;
        await add('channel', message.channelId, message.senderId);
        if (message.topicId === null) continue;
        await add('topic', message.topicId, message.senderId);
        if (!projects.has(message.topicId)) {
          projects.set(message.topicId, (await directory.getTopic(message.topicId))?.projectId ?? null);
        }
        const projectId = projects.get(message.topicId);
        if (projectId) await add('project', projectId, message.senderId);
      }
      for (const { kind, id, userIds } of missing.values()) await memberships.addMembers(kind, id, userIds, at);
    },

    async assertMayView(userId, viewer) {
      if (viewer.channelId !== undefined && !(await isPublic(viewer.channelId))) {
        await assertMember('channel', viewer.channelId, userId, 'reading a channel');
      }
      if (viewer.topicId !== undefined) await assertMember('topic', viewer.topicId, userId, 'reading a topic');
      if (viewer.projectId !== undefined) await assertMember('project', viewer.projectId, userId, 'reading a project');
    },

    assertMember,
    isPublic,

    async reaches(channelId, kind, id) {
      const channel = await memberships.getChannel(channelId);
      if (channel?.visibility === 'public') return true;
      const readers = new Set(channel?.members ?? []);
      return (await memberships.members(kind, id)).every((member) => readers.has(member));
    },
  };
}
