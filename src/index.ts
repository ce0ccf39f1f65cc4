/**
 * mneme: the engine (`createMneme`), its errors, types and ports. The HTTP face is `mneme/http`, the
 * model providers `mneme/models`, test fakes `mneme/testing`.
 */
export { createMneme, type MnemeOptions } from './config/create-mneme.js';
export type { ProviderConnections } from './config/providers.js';
export type { Principal } from './core/access.js';
export type { ApiKeys, CreateApiKeyInput, CreatedApiKey } from './core/api-keys.js';
export type { Clock } from './core/clock.js';
export type { Logger } from './core/engine-context.js';
export { ErrorCode, type FieldIssue, isMnemeError, MnemeError } from './core/errors.js';
export type {
  IdempotencyClaimHandle,
  IdempotencyKeys,
  IdempotentRequest,
  IdempotentResponse,
} from './core/idempotency.js';
export type { ChatCommandResult } from './core/ingest/chat-commands.js';
export type { ExtractionReport } from './core/ingest/extraction.js';
export type { IngestManyOptions, IngestOptions, IngestResult } from './core/ingest/ingest.js';
export type { ConsolidateReport } from './core/maintenance/consolidate-task.js';
export type { DecayReport } from './core/maintenance/decay-task.js';
export type { DreamReport } from './core/maintenance/dream-task.js';
export type { EpisodesReport } from './core/maintenance/episodes-task.js';
export type { LinkReport } from './core/maintenance/link-task.js';
export type { MaintainInput, MaintenanceReport } from './core/maintenance/maintain.js';
export type { MaintenanceTask } from './core/maintenance/maintenance-task.js';
export type { HealthReport, Mneme } from './core/mneme.js';
export type { MnemePolicy, PolicyOptions } from './core/policy.js';
export type { PolicyChange, PolicyState } from './core/policy-state.js';
export type { Dreamer, DreamInput, DreamInsight, DreamMemory } from './core/ports/dreamer.js';
export type {
  EpisodeInput,
  EpisodeMessage,
  EpisodeSummariser,
  EpisodeSummary,
} from './core/ports/episode-summariser.js';
export type { ExtractedFact, ExtractionInput, FactExtractor } from './core/ports/fact-extractor.js';
export type { MemoryMerger, MergeCandidate, MergedMemory, MergeInput } from './core/ports/memory-merger.js';
export { type PresetName, presetNames, presets } from './core/presets.js';
export type { ContextResult } from './core/recall/context-block.js';
export { mergeRecalls } from './core/recall/merge-recalls.js';
export type { MatchType, RecallHit, RecallMode, RecallResult, VectorLegStatus } from './core/recall/recall.js';
export type { ScoreBreakdown } from './core/recall/scoring.js';
export type { ReembedOptions, ReembedProgress, VectorStatus } from './core/reembed.js';
export type {
  ContextInput,
  CreateProjectInput,
  CreateTopicInput,
  DisplayNameInput,
  GetInput,
  IngestExchangeInput,
  IngestInput,
  ListFilter,
  MemoryActionInput,
  PutChannelInput,
  RecallInput,
  RememberInput,
  TurnsInput,
  UpdateInput,
} from './core/schemas.js';
export type { ExportOptions } from './core/transfer/export-data.js';
export { EXPORT_FORMAT, EXPORT_FORMAT_VERSION, EXPORT_FORMAT_VERSIONS } from './core/transfer/export-format.js';
export type { ImportOptions, ImportReport, ImportSource } from './core/transfer/import-lines.js';
export type {
  Memory,
  MemoryPage,
  MemorySnapshot,
  MemorySource,
  MemoryStats,
  MemoryVersion,
  PurgeReport,
  Scope,
  Sector,
  VersionAction,
  Viewer,
} from './core/types.js';
export type { ChatMessage, ChatModel, ChatRequest } from './models/chat-model.js';
export type { EmbeddingModel, EmbeddingPurpose } from './models/embedding-model.js';
export type { ApiKeyRecord } from './storage/api-key-store.js';
export type { Project, Topic, User } from './storage/directory-store.js';
export type { LinkType, MemoryLink } from './storage/link-store.js';
export type { Channel, ChannelVisibility } from './storage/membership-store.js';
export type { AppendedMessage, IngestFileProgress, Message, MessageRole } from './storage/message-store.js';
export type { PolicyVersion } from './storage/policy-store.js';
export {
  createMaintenanceScheduler,
  defaultMaintenanceIntervals,
  type MaintenanceScheduler,
  type MaintenanceSchedulerOptions,
} from './workers/maintenance-scheduler.js';
