import type { Scope } from '../types.js';
import type { ParsedMemoryRecord, ParsedRecord } from './export-format.js';

type Visibility = Extract<ParsedRecord, { type: 'channel' }>['visibility'];

/** What the audience checks keep of one memory record: its owner, the messages it cites and what it is built on. */
interface MemoryFacts {
  line: number;
  scope: Scope;
  userId: string | null;
  channelId: string | null;
  projectId: string | null;
  topicId: string | null;
  messageIds: readonly number[];
  sourceIds: readonly number[];
}

/**
 * Who could see what, as an export file tells it (docs/export-format.md, Import): its channels, members and messages,
 * and the checks that a record does not reach past them (DESIGN 8: a memory is never visible to anyone who could not
 * see what it came from). Fed the file's records in order; a record's check throws an `Error` whose words name the
 * fault, and the checks of the whole file return the first fault with its line.
 *
 * A wider memory than its sources (a global or room memory citing a private channel) is left to the check after the
 * import (`recheckAudiences`), which moves it where its sources' readers see it, as it moves one an audience change
 * left wider: an export of a database whose channel was narrowed before those checks holds such memories. A
 * personal memory is not moved by those checks (the speaker's own); what it cites is checked here, and a file whose
 * personal memory comes from what its user could not see is refused.
 */
export class ImportAudience {
  private readonly visibility = new Map<string, Visibility>();
  private readonly members = new Map<string, Set<string>>();
  private readonly messages = new Map<number, { channelId: string; senderId: string }>();
  /** Channel and sender of every message: who spoke where (a member removed keeps what they said). */
  private readonly speakers = new Set<string>();
  private readonly memories = new Map<number, MemoryFacts>();
  /** Memberships of channels the file does not declare, with their lines. */
  private readonly undeclaredMembers: Array<{ line: number; channelId: string; userId: string }> = [];
  /** Interned ids: a file of a million messages names a few channels and senders. */
  private readonly names = new Map<string, string>();

  addChannel(id: string, visibility: Visibility): void {
    this.visibility.set(this.name(id), visibility);
  }

  /**
   * Records a membership; one of a channel the file does not declare (`declared` false) is checked by
   * `checkChannelMembers` once the messages are in.
   */
  addMembership(
    line: number,
    { kind, spaceId, userId }: { kind: string; spaceId: string; userId: string },
    declared: boolean,
  ): void {
    if (kind === 'channel' && !declared) this.undeclaredMembers.push({ line, channelId: spaceId, userId });
    const key = `${kind}\u0000${spaceId}`;
    let users = this.members.get(key);
    if (!users) {
      users = new Set();
      this.members.set(key, users);
    }
    users.add(this.name(userId));
  }

  /**
   * Records a message; throws when its reply names a message of another channel (ingest refuses one: a reply answers
   * a message of its own channel). The reply's message is one of the file's (checked before).
   */
  addMessage(record: { id: number; channelId: string; senderId: string; replyTo: number | null }): void {
    if (record.replyTo !== null) {
      const answered = this.messages.get(record.replyTo);
      if (answered && answered.channelId !== record.channelId) {
        throw new Error(
          `replyTo names message ${record.replyTo} of channel ${answered.channelId}: a reply answers a message of its own channel (${record.channelId})`,
        );
      }
    }
    const channelId = this.name(record.channelId);
    const senderId = this.name(record.senderId);
    this.messages.set(record.id, { channelId, senderId });
    this.speakers.add(`${channelId}\u0000${senderId}`);
  }

  /**
   * Records a memory; throws when its search context or exchange chunk names a message of a channel that is neither
   * its own (`channelId`) nor one its source messages are in (an exchange's search context is the message before it
   * in its channel, its chunk one of its own messages). The messages are the file's (checked before).
   */
  addMemory(line: number, record: ParsedMemoryRecord): void {
    const cited = new Set<string>();
    for (const id of record.sourceMessageIds) {
      const channelId = this.messages.get(id)?.channelId;
      if (channelId !== undefined) cited.add(channelId);
    }
    const named = (id: number | null | undefined, field: string) => {
      if (id === null || id === undefined) return;
      const channelId = this.messages.get(id)?.channelId;
      if (channelId !== undefined && channelId !== record.channelId && !cited.has(channelId)) {
        throw new Error(
          `${field} names message ${id} of channel ${channelId}, which the memory does not cite (it is of channel ` +
            `${record.channelId ?? 'none'}, its source messages ${cited.size === 0 ? 'none' : `of ${[...cited].join(', ')}`})`,
        );
      }
    };
    named(record.searchContextMessageId, 'searchContextMessageId');
    named(record.chunk?.messageId, 'chunk');
    const messageIds = [...record.sourceMessageIds];
    if (record.searchContextMessageId !== null) messageIds.push(record.searchContextMessageId);
    if (record.chunk) messageIds.push(record.chunk.messageId);
    this.memories.set(record.id, {
      line,
      scope: record.scope,
      userId: record.userId === null ? null : this.name(record.userId),
      channelId: record.channelId,
      projectId: record.projectId,
      topicId: record.topicId,
      messageIds,
      sourceIds: record.sourceIds,
    });
  }

  /**
   * The first membership of a channel that the file neither declares nor holds a message of, or null: a channel
   * exists once declared or written in (a sender joins it), and a member of one that does not would be planted unseen
   * (no listing shows it) and read it once an administrator declared it without naming its members.
   */
  checkChannelMembers(): { line: number; error: Error } | null {
    const written = new Set([...this.messages.values()].map((message) => message.channelId));
    for (const { line, channelId, userId } of this.undeclaredMembers) {
      if (written.has(channelId)) continue;
      return {
        line,
        error: new Error(
          `the membership of ${userId} names channel ${channelId}, which the file neither declares nor holds a message of`,
        ),
      };
    }
    return null;
  }

  /**
   * The first personal memory of the file (its line, what is wrong) that does not come from what its user could
   * see, or null: each message it cites, itself or through the memories it is built on, is one its user sent or of a
   * channel they could read (`couldRead`), and each memory it is built on is its user's or one they see. mneme writes a
   * personal memory only from its speaker's message (extraction, `/remember`), merges and dreams only memories of one
   * user, and moves into a user's own scope only that user's memory: a file holding another is not one mneme wrote.
   * Run once every memory is recorded (a memory may be built on a later one); ids the file does not hold are
   * refused before.
   */
  checkPersonalMemories(): { line: number; error: Error } | null {
    for (const [id, memory] of this.memories) {
      if (memory.scope !== 'personal' || memory.userId === null) continue;
      const problem = this.personalProblem(id, memory, memory.userId);
      if (problem !== null) return { line: memory.line, error: new Error(problem) };
    }
    return null;
  }

  private personalProblem(id: number, memory: MemoryFacts, userId: string): string | null {
    const seen = new Set<number>([id]);
    const pending: Array<{ facts: MemoryFacts; through: number | null }> = [{ facts: memory, through: null }];
    while (pending.length > 0) {
      const { facts, through } = pending.pop() as { facts: MemoryFacts; through: number | null };
      for (const messageId of facts.messageIds) {
        const message = this.messages.get(messageId);
        if (!message || message.senderId === userId || this.couldRead(userId, message.channelId)) continue;
        return (
          `memory ${id} is personal to ${userId} but cites message ${messageId} of channel ${message.channelId}` +
          `${through === null ? '' : ` (through memory ${through})`}, which ${userId} could not read ` +
          `(the channel is ${this.visibility.get(message.channelId) ?? 'not declared'}, ${userId} is not a member and said nothing there): ` +
          'a personal memory comes only from what its user could see'
        );
      }
      for (const sourceId of facts.sourceIds) {
        if (seen.has(sourceId)) continue;
        seen.add(sourceId);
        const source = this.memories.get(sourceId);
        if (!source) continue;
        if (source.userId !== userId && !this.sees(userId, source)) {
          return (
            `memory ${id} is personal to ${userId} but is built on memory ${sourceId} (${describe(source)}), which ` +
            `${userId} does not see: a personal memory is built only on its user's memories or those they see`
          );
        }
        pending.push({ facts: source, through: sourceId });
      }
    }
    return null;
  }

  /** Whether the user could read the channel: it is public, they are a member, or they said something there. */
  private couldRead(userId: string, channelId: string): boolean {
    return (
      this.visibility.get(channelId) === 'public' ||
      this.isMember('channel', channelId, userId) ||
      this.speakers.has(`${channelId}\u0000${userId}`)
    );
  }

  /** Whether the user sees a memory of this scope, as the file's members say. */
  private sees(userId: string, memory: MemoryFacts): boolean {
    switch (memory.scope) {
      case 'global':
        return true;
      case 'personal':
        return memory.userId === userId;
      case 'room':
        return memory.channelId !== null && this.couldRead(userId, memory.channelId);
      case 'session':
        return memory.topicId !== null && this.isMember('topic', memory.topicId, userId);
      case 'project':
        return memory.projectId !== null && this.isMember('project', memory.projectId, userId);
    }
  }

  private isMember(kind: string, spaceId: string, userId: string): boolean {
    return this.members.get(`${kind}\u0000${spaceId}`)?.has(userId) ?? false;
  }

  private name(id: string): string {
    const known = this.names.get(id);
    if (known !== undefined) return known;
    this.names.set(id, id);
    return id;
  }
}

function describe(memory: MemoryFacts): string {
  switch (memory.scope) {
    case 'global':
      return 'global';
    case 'personal':
      return `personal to ${memory.userId}`;
    case 'room':
      return `of the room of channel ${memory.channelId}`;
    case 'session':
      return `of topic ${memory.topicId}`;
    case 'project':
      return `of project ${memory.projectId}`;
  }
}
