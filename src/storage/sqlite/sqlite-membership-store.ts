import type Database from 'better-sqlite3';
import type { Channel, ChannelVisibility, MembershipStore, SpaceKind } from '../membership-store.js';
import { getRow, readSqlite, writeSqlite } from './sqlite-database.js';
import { createSqliteUserNames } from './sqlite-user-names.js';

/** The SQLite implementation of the MembershipStore port (tables `channels` and `members`, migration 7). */
export function createSqliteMembershipStore(database: Database.Database): MembershipStore {
  const userNames = createSqliteUserNames(database);
  const statements = {
    getChannel: database.prepare<[string], { visibility: ChannelVisibility }>(
      'SELECT visibility FROM channels WHERE id = ?',
    ),
    // A visibility left out (null) keeps the row's, or makes a new channel private.
    putChannel: database.prepare<
      [{ id: string; visibility: ChannelVisibility | null; at: number }],
      { visibility: ChannelVisibility }
    >(
      `INSERT INTO channels (id, visibility, created_at, updated_at) VALUES (@id, coalesce(@visibility, 'private'), @at, @at)
       ON CONFLICT (id) DO UPDATE SET visibility = coalesce(@visibility, channels.visibility), updated_at = excluded.updated_at
       RETURNING visibility`,
    ),
    addMember: database.prepare<[SpaceKind, string, string, number]>(
      'INSERT INTO members (kind, space_id, user_id, added_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
    ),
    clearMembers: database.prepare<[SpaceKind, string]>('DELETE FROM members WHERE kind = ? AND space_id = ?'),
    members: database.prepare<[SpaceKind, string], { user_id: string }>(
      'SELECT user_id FROM members WHERE kind = ? AND space_id = ? ORDER BY user_id',
    ),
    isMember: database.prepare<[SpaceKind, string, string], { found: 1 }>(
      'SELECT 1 AS found FROM members WHERE kind = ? AND space_id = ? AND user_id = ?',
    ),
  };

  const membersOf = (kind: SpaceKind, id: string) => statements.members.all(kind, id).map((row) => row.user_id);

  function channelOf(id: string): Channel | null {
    const row = statements.getChannel.get(id);
    const members = membersOf('channel', id);
    if (!row && members.length === 0) return null;
    return { id, visibility: row?.visibility ?? 'private', members };
  }

  function replaceMembers(kind: SpaceKind, id: string, userIds: readonly string[], at: number): void {
    statements.clearMembers.run(kind, id);
    addMembers(kind, id, userIds, at);
  }

  /** Adds members, each a known user (ADR 40). */
  function addMembers(kind: SpaceKind, id: string, userIds: readonly string[], at: number): void {
    for (const userId of new Set(userIds)) statements.addMember.run(kind, id, userId, at);
    userNames.know(userIds, at);
  }

  return {
    async getChannel(id) {
      return readSqlite(`reading channel ${id}`, () => channelOf(id));
    },
    async putChannel(channel, at) {
      return writeSqlite(database, `saving channel ${channel.id}`, () => {
        const previous = channelOf(channel.id);
        const { visibility } = getRow(statements.putChannel, {
          id: channel.id,
          visibility: channel.visibility ?? null,
          at,
        });
        if (channel.members) replaceMembers('channel', channel.id, channel.members, at);
        return { channel: { id: channel.id, visibility, members: membersOf('channel', channel.id) }, previous };
      });
    },
    async addMembers(kind, id, userIds, at) {
      if (userIds.length === 0) return;
      writeSqlite(database, `adding members to ${kind} ${id}`, () => addMembers(kind, id, userIds, at));
    },
    async setMembers(kind, id, userIds, at) {
      writeSqlite(database, `setting the members of ${kind} ${id}`, () => replaceMembers(kind, id, userIds, at));
    },
    async members(kind, id) {
      return readSqlite(`reading the members of ${kind} ${id}`, () => membersOf(kind, id));
    },
    async isMember(kind, id, userId) {
      return readSqlite(
        `checking a member of ${kind} ${id}`,
        () => statements.isMember.get(kind, id, userId) !== undefined,
      );
    },
  };
}
