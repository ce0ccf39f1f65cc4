export interface Topic {
  id: string;
  projectId: string | null;
  title: string | null;
  createdAt: string;
}

export interface Project {
  id: string;
  name: string | null;
  managed: boolean;
  createdAt: string;
}

export interface User {
  id: string;
  displayName: string | null;
}

/** Users, topics and projects: the names and ids memories hang on. */
export interface DirectoryStore {
  /**
   * Creates the user or sets its display name. `deferred`: the caller commits durably right after (the
   * append of `ingest`), so this write needs no flush of its own (as `WriteContext.deferred`).
   */
  putUser(user: User, at: number, options?: { deferred?: boolean }): Promise<User>;
  getUser(id: string): Promise<User | null>;
  /**
   * Whether a user other than `userId` can be taken for the name `key` folds to (ADR 40): one whose display name
   * (or id, when they have none) or whose id has the key `nameKey` gives. Every sender of messages, member of a
   * space and user of an API key has a user row, written with the message, membership or key.
   */
  hasNamesake(userId: string, key: string): Promise<boolean>;
  /** Creates or updates the project; `members`, when given, replace its members in the same transaction. */
  putProject(
    project: { id: string; name: string | null; managed: boolean },
    at: number,
    members?: readonly string[],
  ): Promise<Project>;
  getProject(id: string): Promise<Project | null>;
  /** Creates or updates the topic; `members`, when given, replace its members in the same transaction. */
  putTopic(
    topic: { id: string; projectId: string | null; title: string | null },
    at: number,
    members?: readonly string[],
  ): Promise<Topic>;
  getTopic(id: string): Promise<Topic | null>;
}
