import type { Channel, ChannelVisibility, MembershipStore, SpaceKind } from '../membership-store.js';
import { type PostgresDatabase, type PostgresQueryable, withPgErrors, writePg } from './postgres-database.js';
import { knowPostgresUsers } from './postgres-user-names.js';

/** The PostgreSQL implementation of the MembershipStore port (tables `channels` and `members`). */
export function createPostgresMembershipStore(database: PostgresDatabase): MembershipStore {
  const membersOf = async (q: PostgresQueryable, kind: SpaceKind, id: string) =>
    (
      await q.query<{ user_id: string }>(
        'SELECT user_id FROM members WHERE kind = $1 AND space_id = $2 ORDER BY user_id COLLATE "C"',
        [kind, id],
      )
    ).rows.map((row) => row.user_id);
  const addMembers = async (
    q: PostgresQueryable,
    kind: SpaceKind,
    id: string,
    userIds: readonly string[],
    at: number,
  ) => {
    if (userIds.length === 0) return;
    await q.query(
      `INSERT INTO members (kind, space_id, user_id, added_at)
       SELECT $1, $2, user_id, $4 FROM unnest($3::text[]) AS user_id ON CONFLICT DO NOTHING`,
      [kind, id, [...new Set(userIds)], at],
    );
    await knowPostgresUsers(database, q, userIds, at);
  };
  const replaceMembers = async (
    q: PostgresQueryable,
    kind: SpaceKind,
    id: string,
    userIds: readonly string[],
    at: number,
  ) => {
    await q.query('DELETE FROM members WHERE kind = $1 AND space_id = $2', [kind, id]);
    await addMembers(q, kind, id, userIds, at);
  };

  return {
    async getChannel(id) {
      return withPgErrors(`reading channel ${id}`, async (): Promise<Channel | null> => {
        const row = (
          await database.query<{ visibility: ChannelVisibility }>('SELECT visibility FROM channels WHERE id = $1', [id])
        ).rows[0];
        const members = await membersOf(database, 'channel', id);
        if (!row && members.length === 0) return null;
        return { id, visibility: row?.visibility ?? 'private', members };
      });
    },
    async putChannel(channel, at) {
      return writePg(database, `saving channel ${channel.id}`, async (q) => {
        // The channel as it was, its row locked until the commit (FOR UPDATE): a declaration committed by another
        // transaction in between is read, not overwritten unseen. A channel without a row has none to lock; two
        // that declare it at once both read it as new, for which the caller checks both ways.
        const before = (
          await q.query<{ visibility: ChannelVisibility }>('SELECT visibility FROM channels WHERE id = $1 FOR UPDATE', [
            channel.id,
          ])
        ).rows[0];
        const membersBefore = await membersOf(q, 'channel', channel.id);
        const previous: Channel | null =
          !before && membersBefore.length === 0
            ? null
            : { id: channel.id, visibility: before?.visibility ?? 'private', members: membersBefore };
        // A visibility left out (null) keeps the row's, or makes a new channel private.
        const { rows } = await q.query<{ visibility: ChannelVisibility }>(
          `INSERT INTO channels (id, visibility, created_at, updated_at) VALUES ($1, coalesce($2, 'private'), $3, $3)
           ON CONFLICT (id) DO UPDATE SET visibility = coalesce($2, channels.visibility), updated_at = excluded.updated_at
           RETURNING visibility`,
          [channel.id, channel.visibility ?? null, at],
        );
        const visibility = rows[0]?.visibility ?? channel.visibility ?? 'private';
        if (channel.members) await replaceMembers(q, 'channel', channel.id, channel.members, at);
        return {
          channel: { id: channel.id, visibility, members: await membersOf(q, 'channel', channel.id) },
          previous,
        };
      });
    },
    async addMembers(kind, id, userIds, at) {
      if (userIds.length === 0) return;
      await writePg(database, `adding members to ${kind} ${id}`, (q) => addMembers(q, kind, id, userIds, at));
    },
    async setMembers(kind, id, userIds, at) {
      await writePg(database, `setting the members of ${kind} ${id}`, (q) => replaceMembers(q, kind, id, userIds, at));
    },
    async members(kind, id) {
      return withPgErrors(`reading the members of ${kind} ${id}`, () => membersOf(database, kind, id));
    },
    async isMember(kind, id, userId) {
      return withPgErrors(`checking a member of ${kind} ${id}`, async () => {
        const { rows } = await database.query(
          'SELECT 1 FROM members WHERE kind = $1 AND space_id = $2 AND user_id = $3',
          [kind, id, userId],
        );
        return rows.length > 0;
      });
    },
  };
}
