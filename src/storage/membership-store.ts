/** What a channel's messages are open to: its two parties, its members, or every user. */
export type ChannelVisibility = 'direct' | 'private' | 'public';

/** The spaces that have members. */
export type SpaceKind = 'channel' | 'topic' | 'project';

/** A channel as an administrator declared it (or as ingest first saw it). */
export interface Channel {
  id: string;
  visibility: ChannelVisibility;
  members: string[];
}

/** Who belongs where: channel visibility and the members of channels, topics and projects. */
export interface MembershipStore {
  /** The channel with its members, or null when it was never declared nor seen. */
  getChannel(id: string): Promise<Channel | null>;
  /**
   * Declares a channel: its visibility when given (left out, a channel with a row keeps its own, a new one is
   * private) and, when `members` is given, replaces its members; in one transaction, which also reads the channel
   * as it was just before (`previous`; null: never declared nor seen), so that what the declaration changed is
   * judged from the state it replaced, whatever another declaration committed after the caller last read it.
   */
  putChannel(
    channel: { id: string; visibility?: ChannelVisibility; members?: readonly string[] },
    at: number,
  ): Promise<{ channel: Channel; previous: Channel | null }>;
  /** Adds members to a space (existing ones are kept). */
  addMembers(kind: SpaceKind, id: string, userIds: readonly string[], at: number): Promise<void>;
  /** Replaces a space's members. */
  setMembers(kind: SpaceKind, id: string, userIds: readonly string[], at: number): Promise<void>;
  /** The members of a space, sorted. */
  members(kind: SpaceKind, id: string): Promise<string[]>;
  /** Whether the user is a member of the space. */
  isMember(kind: SpaceKind, id: string, userId: string): Promise<boolean>;
}
