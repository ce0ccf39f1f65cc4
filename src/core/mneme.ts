import type { MemoryLink } from '../storage/link-store.js';
import type { Message } from '../storage/message-store.js';
import type { PolicyVersion } from '../storage/policy-store.js';
import type { Principal } from './access.js';
import type { ApiKeys } from './api-keys.js';
import type { MnemeDirectory } from './directory.js';
import type { IdempotencyKeys } from './idempotency.js';
import type { MnemeIngest } from './ingest/ingest.js';
import type {
  AnalyticsSeries,
  ChannelSummary,
  MaintenanceStatus,
  MessagePage,
  MessagePageInput,
} from './inspection.js';
import type { MaintainInput, MaintenanceReport } from './maintenance/maintain.js';
import type { PolicyChange, PolicyState } from './policy-state.js';
import type { ContextResult } from './recall/context-block.js';
import type { RecallResult } from './recall/recall.js';
import type { ReembedOptions, ReembedProgress, VectorStatus } from './reembed.js';
import type {
  ContextInput,
  GetInput,
  HistoryInput,
  ListFilter,
  MemoryActionInput,
  RecallInput,
  RememberInput,
  UpdateInput,
} from './schemas.js';
import type { ExportOptions } from './transfer/export-data.js';
import type { ImportOptions, ImportReport } from './transfer/import-lines.js';
import type { Memory, MemoryPage, MemoryStats, MemoryVersion, PurgeReport } from './types.js';

/**
 * Whether the engine can go on serving (`Mneme.health`): `unavailable` only for what does not mend by itself, with
 * one line saying why and what to do.
 */
export type HealthReport = { status: 'ok' } | { status: 'unavailable'; reason: string };

/** The memory engine: one object, the same behaviour behind every face. */
export interface Mneme extends MnemeIngest, MnemeDirectory {
  /** Stores a manual memory (source `manual`). Scope defaults to `global`; `session` is refused. */
  remember(input: RememberInput): Promise<Memory>;
  /**
   * The memories that matter for a query, for a viewer: full-text and vector search in the viewer's
   * scopes, fused, scored (every hit explains its score) and joined by linked memories; each
   * returned memory is reinforced. topK 10 by default, at most 100.
   */
  recall(input: RecallInput): Promise<RecallResult>;
  /**
   * The context block for the next reply: a conversation-aware recall (topK 5 by default) formatted
   * in the configured format within the word budget, memories quoted as data.
   */
  context(input: ContextInput): Promise<ContextResult>;
  /** One memory by id; with a viewer, NOT_FOUND unless that viewer may see it. */
  get(input: GetInput | number): Promise<Memory>;
  /** Edits content, category, importance or pinned; keeps a version; new content is re-embedded. */
  update(input: UpdateInput): Promise<Memory>;
  /** Soft-deletes: archived, vector removed, version kept. */
  forget(input: MemoryActionInput | number): Promise<Memory>;
  /** Undoes `forget`. */
  restore(input: MemoryActionInput | number): Promise<Memory>;
  /** Hard-deletes every message, memory, vector, version and link of one user (data-protection requests). */
  purgeUser(userId: string): Promise<PurgeReport>;
  /** Memories by filter, newest first, a page at a time. */
  list(filter?: ListFilter): Promise<MemoryPage>;
  /** Every version of a memory, oldest first; with a viewer, NOT_FOUND unless that viewer may see it. */
  history(input: HistoryInput | number | string): Promise<MemoryVersion[]>;
  /** Every link from or to a memory; with a viewer, NOT_FOUND unless that viewer may see it. */
  links(input: GetInput | number): Promise<MemoryLink[]>;
  /** The messages a memory came from; with a viewer, NOT_FOUND unless that viewer may see the memory. */
  sources(input: GetInput | number): Promise<Message[]>;
  stats(): Promise<MemoryStats>;
  /** The series of the inspector's analytics: additions per day, decay distributions, archives by cause, backlog. */
  analytics(): Promise<AnalyticsSeries>;
  /** Every channel with messages, its visibility and extraction watermark. */
  channels(): Promise<ChannelSummary[]>;
  /** A page of a channel's messages, oldest first, each with the memories extracted from it. */
  messages(input: MessagePageInput): Promise<MessagePage>;
  /** Each maintenance task's state and last report (of this process), and the extraction backlog per channel. */
  maintenanceStatus(): Promise<MaintenanceStatus>;
  /**
   * The policy the database runs under (its preset, the settings changed on top of it, the effective
   * policy), as stored now: a change another process made is taken up by this engine too.
   */
  policy(): Promise<PolicyState>;
  /**
   * Changes the stored policy (another preset, settings by dotted path such as `{ 'recall.topK': 8 }`),
   * validated as a whole, kept as a new version; this engine runs under it at once, others at their
   * next `policy()` or maintenance run, or when reopened.
   */
  setPolicy(change: PolicyChange): Promise<PolicyState>;
  /** Every version of the policy, oldest first: what changed, who changed it, when. */
  policyHistory(): Promise<PolicyVersion[]>;
  /**
   * Runs background maintenance now (decay, episodes, consolidate, link, dream; all by default) and
   * reports what each task did. `now` runs it as of another time. A task already running is skipped. Each call
   * first checks the audience changes a stopped process left (ADR 5); `tasks: 'none'` runs that alone.
   */
  maintain(input?: MaintainInput): Promise<MaintenanceReport>;
  /**
   * Gives every active memory without a vector of the current embedding model one, in batches, with
   * progress; resumable (after a model change, or for memories stored while the model was down).
   * CONFIG_INVALID without an embedding model.
   */
  reembed(options?: ReembedOptions): Promise<ReembedProgress>;
  /** The model the vector index holds and how many active memories lack a vector of the current model. */
  vectorStatus(): Promise<VectorStatus>;
  /**
   * Whether the database can still be served, for health probes: cheap (SQLite: three `stat` calls), no query, never
   * waits for a lock. `unavailable` once the SQLite file, -wal or -shm this process opened was removed, moved or
   * replaced (every write is refused from then on, until the file is put back or the process restarted). A lock held
   * elsewhere, a full disk or a PostgreSQL server away leave it `ok`: each call is answered STORE_BUSY and goes
   * through once they pass. Open to every principal: it says nothing of anyone's data.
   */
  health(): Promise<HealthReport>;
  /**
   * The database (or, with `userId`, what that user may see and what they said) as JSON lines of the
   * export format (docs/export-format.md), streamed a page at a time; each string is one line without
   * its newline.
   */
  exportData(options?: ExportOptions): AsyncIterable<string>;
  /**
   * Restores an export into this database, which must be empty (CONFLICT otherwise), or adds a mem0
   * export's memories (`from: 'mem0'`), in one transaction: a bad line (INVALID_INPUT naming it) leaves
   * the database unchanged. Imported memories have no vector: re-embed them (`reembed`).
   */
  importData(lines: AsyncIterable<string> | Iterable<string>, options?: ImportOptions): Promise<ImportReport>;
  /** API keys of the HTTP service: created, listed, revoked, checked. */
  readonly apiKeys: ApiKeys;
  /** Idempotency keys of the HTTP service: a retried write replays the first response (ADR 14). */
  readonly idempotency: IdempotencyKeys;
  /**
   * The same engine acting for `principal`: an administrator's is this engine; a user's checks, before
   * every call, that the user names only the channels, topics and projects it belongs to and writes only
   * into its own space (ADR 5), answering FORBIDDEN otherwise. Every face calls the engine through it.
   */
  as(principal: Principal): Mneme;
  /** Closes the database; the engine cannot be used afterwards. */
  close(): Promise<void>;
}
