export { createMneme, type MnemeOptions } from './config/create-mneme.js';
export type { ProviderConnections } from './config/providers.js';
export type { ApiKeys, CreateApiKeyInput, CreatedApiKey } from './core/api-keys.js';
export type { Clock } from './core/clock.js';
export type { Logger } from './core/engine-context.js';
export { ErrorCode, type FieldIssue, isMnemeError, MnemeError } from './core/errors.js';
export type { ChatCommandResult } from './core/ingest/chat-commands.js';
export type { ExtractionReport } from './core/ingest/extraction.js';
export type { IngestResult } from './core/ingest/ingest.js';
export type { ConsolidateReport } from './core/maintenance/consolidate-task.js';
export type { DecayReport } from './core/maintenance/decay-task.js';
export type { DreamReport } from './core/maintenance/dream-task.js';
export type { EpisodesReport } from './core/maintenance/episodes-task.js';
export type { LinkReport } from './core/maintenance/link-task.js';
export type { MaintainInput, MaintenanceReport } from './core/maintenance/maintain.js';
export type { MaintenanceTask } from './core/maintenance/maintenance-task.js';
export type { Mneme } from './core/mneme.js';
export type { MnemePolicy, PolicyOptions } from './core/policy.js';
export type { Dreamer, DreamInput, DreamInsight, DreamMemory } from './core/ports/dreamer.js';
export type {
  EpisodeInput,
  EpisodeMessage,
  EpisodeSummariser,
  EpisodeSummary,
} from './core/ports/episode-summariser.js';
export type { ExtractedFact, ExtractionInput, FactExtractor } from './core/ports/fact-extractor.js';
export type { MemoryMerger, MergeCandidate, MergedMemory, MergeInput } from './core/ports/memory-merger.js';
export type { ContextResult } from './core/recall/context-block.js';
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
  RecallInput,
  RememberInput,
  TurnsInput,
  UpdateInput,
} from './core/schemas.js';
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
export { createHttpApp, type HttpAppOptions } from './http/http-app.js';
export { type HttpServerOptions, type RunningHttpServer, startHttpServer } from './http/http-server.js';
export { createChatDreamer } from './models/chat/chat-dreamer.js';
export { createChatEpisodeSummariser } from './models/chat/chat-episode-summariser.js';
export { type ChatFactExtractorOptions, createChatFactExtractor } from './models/chat/chat-fact-extractor.js';
export { createChatMemoryMerger } from './models/chat/chat-memory-merger.js';
export type { ChatMessage, ChatModel, ChatRequest } from './models/chat-model.js';
export type { EmbeddingModel, EmbeddingPurpose } from './models/embedding-model.js';
export { createOfflineExtractor } from './models/offline/offline-extractor.js';
export { createOllamaChatModel, type OllamaChatModelOptions } from './models/ollama/ollama-chat-model.js';
export {
  createOllamaEmbeddingModel,
  type OllamaEmbeddingModelOptions,
} from './models/ollama/ollama-embedding-model.js';
export {
  createOpenAiCompatibleChatModel,
  type OpenAiCompatibleChatModelOptions,
} from './models/openai-compatible/openai-compatible-chat-model.js';
export type { OpenAiCompatibleConnection } from './models/openai-compatible/openai-compatible-client.js';
export {
  createOpenAiCompatibleEmbeddingModel,
  type OpenAiCompatibleEmbeddingModelOptions,
} from './models/openai-compatible/openai-compatible-embedding-model.js';
export type { ProviderHttpOptions, Sleep } from './models/provider-http.js';
export {
  createTransformersEmbeddingModel,
  type TransformersEmbeddingModelOptions,
} from './models/transformers/transformers-embedding-model.js';
export type { ApiKeyRecord } from './storage/api-key-store.js';
export type { Project, Topic, User } from './storage/directory-store.js';
export type { LinkType, MemoryLink } from './storage/link-store.js';
export type { Message, MessageRole } from './storage/message-store.js';
export {
  createMaintenanceScheduler,
  defaultMaintenanceIntervals,
  type MaintenanceScheduler,
  type MaintenanceSchedulerOptions,
} from './workers/maintenance-scheduler.js';
