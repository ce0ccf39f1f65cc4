import { toIso } from '../../core/clock.js';
import type { DirectoryStore, Project, Topic } from '../directory-store.js';
import { firstRow, type PostgresDatabase, type PostgresQueryable, withPgErrors, writePg } from './postgres-database.js';
import { hasPostgresNamesake, knowPostgresUsers, putPostgresUserName } from './postgres-user-names.js';

interface ProjectRow {
  id: string;
  name: string | null;
  managed: boolean;
  created_at: number;
}

interface TopicRow {
  id: string;
  project_id: string | null;
  title: string | null;
  created_at: number;
}

/** The PostgreSQL implementation of the DirectoryStore port. */
export function createPostgresDirectoryStore(database: PostgresDatabase): DirectoryStore {
  return {
    async putUser(user, at) {
      // One transaction: the name and the labels it makes due (ADR 44).
      return writePg(database, `saving user ${user.id}`, async (q) => {
        await putPostgresUserName(database, q, user, at);
        return { ...user };
      });
    },
    async getUser(id) {
      return withPgErrors(`reading user ${id}`, async () => {
        const { rows } = await database.query<{ id: string; displayName: string | null }>(
          'SELECT id, display_name AS "displayName" FROM users WHERE id = $1',
          [id],
        );
        return rows[0] ?? null;
      });
    },
    async hasNamesake(userId, key) {
      return withPgErrors(`looking for namesakes of user ${userId}`, async () => {
        return hasPostgresNamesake(database, userId, key);
      });
    },
    async putProject(project, at, members) {
      const sql = `INSERT INTO projects (id, name, managed, created_at) VALUES ($1, $2, $3, $4)
          ON CONFLICT (id) DO UPDATE SET name = excluded.name, managed = excluded.managed RETURNING *`;
      const save = async (q: PostgresQueryable) => {
        const row = firstRow(await q.query<ProjectRow>(sql, [project.id, project.name, project.managed, at]), sql);
        if (members) await replaceMembers(database, q, 'project', project.id, members, at);
        return toProject(row);
      };
      return members
        ? writePg(database, `saving project ${project.id} and its members`, save)
        : withPgErrors(`saving project ${project.id}`, () => save(database));
    },
    async getProject(id) {
      return withPgErrors(`reading project ${id}`, async () => {
        const row = (await database.query<ProjectRow>('SELECT * FROM projects WHERE id = $1', [id])).rows[0];
        return row ? toProject(row) : null;
      });
    },
    async putTopic(topic, at, members) {
      const sql = `INSERT INTO topics (id, project_id, title, created_at) VALUES ($1, $2, $3, $4)
          ON CONFLICT (id) DO UPDATE SET project_id = excluded.project_id, title = excluded.title RETURNING *`;
      const save = async (q: PostgresQueryable) => {
        const row = firstRow(await q.query<TopicRow>(sql, [topic.id, topic.projectId, topic.title, at]), sql);
        if (members) await replaceMembers(database, q, 'topic', topic.id, members, at);
        return toTopic(row);
      };
      return members
        ? writePg(database, `saving topic ${topic.id} and its members`, save)
        : withPgErrors(`saving topic ${topic.id}`, () => save(database));
    },
    async getTopic(id) {
      return withPgErrors(`reading topic ${id}`, async () => {
        const row = (await database.query<TopicRow>('SELECT * FROM topics WHERE id = $1', [id])).rows[0];
        return row ? toTopic(row) : null;
      });
    },
  };
}

/** Replaces a topic's or project's members, each a known user (ADR 40), in the caller's transaction. */
async function replaceMembers(
  database: PostgresDatabase,
  q: PostgresQueryable,
  kind: 'topic' | 'project',
  id: string,
  userIds: readonly string[],
  at: number,
): Promise<void> {
  await q.query('DELETE FROM members WHERE kind = $1 AND space_id = $2', [kind, id]);
  for (const userId of new Set(userIds)) {
    await q.query(
      'INSERT INTO members (kind, space_id, user_id, added_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
      [kind, id, userId, at],
    );
  }
  await knowPostgresUsers(database, q, userIds, at);
}

function toProject(row: ProjectRow): Project {
  return { id: row.id, name: row.name, managed: row.managed, createdAt: toIso(row.created_at) };
}

function toTopic(row: TopicRow): Topic {
  return { id: row.id, projectId: row.project_id, title: row.title, createdAt: toIso(row.created_at) };
}
