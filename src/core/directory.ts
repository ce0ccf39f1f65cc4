import type { Project, Topic, User } from '../storage/directory-store.js';
import type { Channel } from '../storage/membership-store.js';
import { changeAudience } from './derived-audience.js';
import type { EngineContext } from './engine-context.js';
import { ErrorCode, MnemeError } from './errors.js';
import {
  ChannelIdSchema,
  type CreateProjectInput,
  CreateProjectInputSchema,
  type CreateTopicInput,
  CreateTopicInputSchema,
  type DisplayNameInput,
  DisplayNameInputSchema,
  type PutChannelInput,
  PutChannelInputSchema,
  parseInput,
} from './schemas.js';
import { ownerKey } from './scope.js';

/** The names and spaces memories hang on: users, topics, projects and channels with their members. */
export interface MnemeDirectory {
  /** Sets the name extracted facts use for a user ("Oz prefers ..."). */
  setDisplayName(input: DisplayNameInput): Promise<User>;
  /** Creates or renames a topic (a conversation session), optionally inside an existing project; `members` replaces its members. */
  createTopic(input: CreateTopicInput): Promise<Topic>;
  /** Creates or updates a project; work sessions are extracted only for `managed` projects; `members` replaces its members. */
  createProject(input: CreateProjectInput): Promise<Project>;
  /**
   * Declares who may read a channel: `direct`, `private` (the default) or `public`, and, when given,
   * replaces its members. Senders seen through ingest become members on their own.
   */
  putChannel(input: PutChannelInput): Promise<Channel>;
  /** A channel's visibility and members; NOT_FOUND when it was never declared nor written in. */
  channel(id: string): Promise<Channel>;
}

export function createDirectory(context: EngineContext): MnemeDirectory {
  const { directory, memberships } = context.storage;
  const { clock } = context;

  return {
    async setDisplayName(input) {
      const parsed = parseInput(DisplayNameInputSchema, input, 'display name');
      return directory.putUser({ id: parsed.userId, displayName: parsed.displayName }, clock.now());
    },

    async createTopic(input) {
      const parsed = parseInput(CreateTopicInputSchema, input, 'topic');
      if (parsed.projectId !== undefined && !(await directory.getProject(parsed.projectId))) {
        throw new MnemeError(
          ErrorCode.NotFound,
          `project ${parsed.projectId} does not exist; create it with createProject first`,
        );
      }
      // The topic and its members in one transaction: a refused request changes neither.
      const put = () =>
        directory.putTopic(
          { id: parsed.id, projectId: parsed.projectId ?? null, title: parsed.title ?? null },
          clock.now(),
          parsed.members,
        );
      // A new member may not read every channel the topic's memories came from (ADR 5, 2026-12-03).
      return parsed.members
        ? changeAudience(context, { owner: ownerKey('session', { topicId: parsed.id }) }, put)
        : put();
    },

    async createProject(input) {
      const parsed = parseInput(CreateProjectInputSchema, input, 'project');
      // The project and its members in one transaction: a refused request changes neither.
      const put = () =>
        directory.putProject(
          { id: parsed.id, name: parsed.name ?? null, managed: parsed.managed },
          clock.now(),
          parsed.members,
        );
      return parsed.members
        ? changeAudience(context, { owner: ownerKey('project', { projectId: parsed.id }) }, put)
        : put();
    },

    async putChannel(input) {
      const parsed = parseInput(PutChannelInputSchema, input, 'channel');
      // Fewer readers (made private or direct, a member removed): what was derived from the channel for a
      // wider audience moves into its room (ADR 5, 2026-12-03). More readers (made public, a member added):
      // a memory of its room that cites another channel (moved there by an earlier change) moves where its
      // readers read that channel too. A declaration that changes no reader (the same again) reads nothing.
      // Both marks before the write: a process that dies after it leaves both checks to `maintain`. Which
      // readers changed is judged from the channel as the write's own transaction read it (attack21: read
      // before the marks, another declaration committed in between went unseen).
      const narrowed = () =>
        changeAudience(
          context,
          { channelId: parsed.id },
          () =>
            memberships.putChannel(
              {
                id: parsed.id,
                ...(parsed.visibility ? { visibility: parsed.visibility } : {}),
                ...(parsed.members ? { members: parsed.members } : {}),
              },
              clock.now(),
            ),
          ({ channel, previous }) =>
            previous === null ||
            (previous.visibility === 'public' && channel.visibility !== 'public') ||
            previous.members.some((member) => !channel.members.includes(member)),
        );
      const { channel } = await changeAudience(
        context,
        { owner: ownerKey('room', { channelId: parsed.id }) },
        narrowed,
        ({ channel, previous }) =>
          previous === null ||
          (previous.visibility !== 'public' && channel.visibility === 'public') ||
          channel.members.some((member) => !previous.members.includes(member)),
      );
      return channel;
    },

    async channel(id) {
      const channelId = parseInput(ChannelIdSchema, id, 'channel id');
      const channel = await memberships.getChannel(channelId);
      if (!channel) throw new MnemeError(ErrorCode.NotFound, `channel ${channelId} was never declared nor written in`);
      return channel;
    },
  };
}
