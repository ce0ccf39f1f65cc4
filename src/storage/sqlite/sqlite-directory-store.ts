import type Database from 'better-sqlite3';
import { toIso } from '../../core/clock.js';
import type { DirectoryStore, Project, Topic } from '../directory-store.js';
import { getRow, readSqlite, writeSqlite } from './sqlite-database.js';

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
  const statements = {
    putUser: database.prepare<[string, string | null, number, number]>(
      `INSERT INTO users (id, display_name, created_at, updated_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, updated_at = excluded.updated_at`,
    ),
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
  };

  return {
    async putUser(user, at, options = {}) {
      const save = () => {
        statements.putUser.run(user.id, user.displayName, at, at);
        return { ...user };
      };
      return options.deferred === true
        ? writeSqlite(database, `saving user ${user.id}`, save, { deferred: true })
        : readSqlite(`saving user ${user.id}`, save);
    },
    async getUser(id) {
      return readSqlite(`reading user ${id}`, () => statements.getUser.get(id) ?? null);
    },
    async putProject(project, at) {
      return readSqlite(`saving project ${project.id}`, () =>
        toProject(getRow(statements.putProject, project.id, project.name, project.managed ? 1 : 0, at)),
      );
    },
    async getProject(id) {
      return readSqlite(`reading project ${id}`, () => {
        const row = statements.getProject.get(id);
        return row ? toProject(row) : null;
      });
    },
    async putTopic(topic, at) {
      return readSqlite(`saving topic ${topic.id}`, () =>
        toTopic(getRow(statements.putTopic, topic.id, topic.projectId, topic.title, at)),
      );
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
