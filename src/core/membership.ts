import type { SpaceKind } from '../storage/membership-store.js';
import type { NewMessage, SpaceJoin } from '../storage/message-store.js';
import type { EngineContext } from './engine-context.js';
import { ErrorCode, MnemeError } from './errors.js';
import type { Viewer } from './types.js';

/** Who belongs where, as the engine asks it (ADR 5). */
export interface Membership {
  /**
   * For ingest: the messages with the spaces the sender of each user message joins when it is
   * appended (its channel, its topic and that topic's project), written in the append's transaction.
   */
  withJoins(messages: readonly NewMessage[]): Promise<NewMessage[]>;
  /**
   * `withJoins` for a sender who may start a space but not rejoin one (a stdio MCP session of one user): FORBIDDEN
   * when the sender of a user message is not a member of its channel, topic or topic's project that exists already;
   * the messages join only the spaces that do not exist yet (the first message starts them), so a removal that
   * lands before the append stays.
   */
  withJoinsOfNewSpaces(messages: readonly NewMessage[]): Promise<NewMessage[]>;
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

  async function withJoins(messages: readonly NewMessage[]): Promise<NewMessage[]> {
    const at = context.clock.now();
    const projects = new Map<string, string | null>();
    const joined: NewMessage[] = [];
    for (const message of messages) {
      if (message.role !== 'user') {
        joined.push(message);
        continue;
      }
      const joins: SpaceJoin[] = [{ kind: 'channel', id: message.channelId, at }];
      if (message.topicId !== null) {
        joins.push({ kind: 'topic', id: message.topicId, at });
        if (!projects.has(message.topicId)) {
          projects.set(message.topicId, (await directory.getTopic(message.topicId))?.projectId ?? null);
        }
        const projectId = projects.get(message.topicId);
        if (projectId) joins.push({ kind: 'project', id: projectId, at });
      }
      joined.push({ ...message, joins });
    }
    return joined;
  }

  return {
    withJoins,

    async withJoinsOfNewSpaces(messages) {
      const exists = new Map<string, boolean>();
      const existing = async ({ kind, id }: SpaceJoin): Promise<boolean> => {
        const key = `${kind} ${id}`;
        let answer = exists.get(key);
        if (answer === undefined) {
          answer =
            kind === 'channel'
              ? (await memberships.getChannel(id)) !== null
              : kind === 'topic'
                ? (await directory.getTopic(id)) !== null
                : true; // A topic's project: named by an existing topic.
          exists.set(key, answer);
        }
        return answer;
      };
      const joined: NewMessage[] = [];
      for (const message of await withJoins(messages)) {
        const joins: SpaceJoin[] = [];
        for (const join of message.joins ?? []) {
          if (!(await existing(join))) {
            // Checked again in the append's transaction: another sender may start the space meanwhile.
            joins.push({ ...join, onlyIfNew: true });
            continue;
          }
          if (await memberships.isMember(join.kind, join.id, message.senderId)) continue;
          throw new MnemeError(
            ErrorCode.Forbidden,
            `recording a message: user ${message.senderId} is not a member of ${spaceNames[join.kind]} ${join.id} (an administrator removed them, or never added them); an administrator adds members`,
          );
        }
        joined.push(message.joins === undefined ? message : { ...message, joins });
      }
      return joined;
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
