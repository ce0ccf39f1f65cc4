import type Database from 'better-sqlite3';
import { toIso } from '../../core/clock.js';
import type { DirectoryStore, Project, Topic } from '../directory-store.js';
import { getRow, readSqlite, writeSqlite } from './sqlite-database.js';
import { createSqliteUserNames } from './sqlite-user-names.js';

interface ProjectRow {
  id: string;
  name: string | null;
  managed: 0 | 1;
  created_at: number;
}

interface TopicRow {
  id: string;
  project_id: string | null;
  title: string | null;
  created_at: number;
}

/** The SQLite implementation of the DirectoryStore port. */
export function createSqliteDirectoryStore(database: Database.Database): DirectoryStore {
  const userNames = createSqliteUserNames(database);
  const statements = {
    getUser: database.prepare<[string], { id: string; displayName: string | null }>(
      'SELECT id, display_name AS displayName FROM users WHERE id = ?',
    ),
    putProject: database.prepare<[string, string | null, 0 | 1, number], ProjectRow>(
      `INSERT INTO projects (id, name, managed, created_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (id) DO UPDATE SET name = excluded.name, managed = excluded.managed RETURNING *`,
    ),
    getProject: database.prepare<[string], ProjectRow>('SELECT * FROM projects WHERE id = ?'),
    putTopic: database.prepare<[string, string | null, string | null, number], TopicRow>(
      `INSERT INTO topics (id, project_id, title, created_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (id) DO UPDATE SET project_id = excluded.project_id, title = excluded.title RETURNING *`,
    ),
    getTopic: database.prepare<[string], TopicRow>('SELECT * FROM topics WHERE id = ?'),
    clearMembers: database.prepare<[string, string]>('DELETE FROM members WHERE kind = ? AND space_id = ?'),
    addMember: database.prepare<[string, string, string, number]>(
      'INSERT INTO members (kind, space_id, user_id, added_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
    ),
  };

  /** Replaces a topic's or project's members (inside the caller's transaction). */
  function replaceMembers(kind: 'topic' | 'project', id: string, userIds: readonly string[], at: number): void {
    statements.clearMembers.run(kind, id);
    for (const userId of new Set(userIds)) statements.addMember.run(kind, id, userId, at);
    userNames.know(userIds, at);
  }

  return {
    async putUser(user, at, options = {}) {
      const save = () => {
        userNames.put(user, at);
        return { ...user };
      };
      // One transaction: the name and the labels it makes due (ADR 44).
      return writeSqlite(database, `saving user ${user.id}`, save, { deferred: options.deferred === true });
    },
    async getUser(id) {
      return readSqlite(`reading user ${id}`, () => statements.getUser.get(id) ?? null);
    },
    async putProject(project, at, members) {
      const save = () => {
        const row = getRow(statements.putProject, project.id, project.name, project.managed ? 1 : 0, at);
        if (members) replaceMembers('project', project.id, members, at);
        return toProject(row);
      };
      return members
        ? writeSqlite(database, `saving project ${project.id} and its members`, save)
        : readSqlite(`saving project ${project.id}`, save);
    },
    async hasNamesake(userId, key) {
      return readSqlite(`looking for namesakes of user ${userId}`, () => userNames.hasNamesake(userId, key));
    },
    async getProject(id) {
      return readSqlite(`reading project ${id}`, () => {
        const row = statements.getProject.get(id);
        return row ? toProject(row) : null;
      });
    },
    async putTopic(topic, at, members) {
      const save = () => {
        const row = getRow(statements.putTopic, topic.id, topic.projectId, topic.title, at);
        if (members) replaceMembers('topic', topic.id, members, at);
        return toTopic(row);
      };
      return members
        ? writeSqlite(database, `saving topic ${topic.id} and its members`, save)
        : readSqlite(`saving topic ${topic.id}`, save);
    },
    async getTopic(id) {
      return readSqlite(`reading topic ${id}`, () => {
        const row = statements.getTopic.get(id);
        return row ? toTopic(row) : null;
      });
    },
  };
}

function toProject(row: ProjectRow): Project {
  return { id: row.id, name: row.name, managed: row.managed === 1, createdAt: toIso(row.created_at) };
}

function toTopic(row: TopicRow): Topic {
  return { id: row.id, projectId: row.project_id, title: row.title, createdAt: toIso(row.created_at) };
}
