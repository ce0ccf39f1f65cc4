export { createMneme, type MnemeOptions } from './config/create-mneme.js';
export type { Clock } from './core/clock.js';
export type { Logger } from './core/engine-context.js';
export { ErrorCode, type FieldIssue, isMnemeError, MnemeError } from './core/errors.js';
export type { Mneme } from './core/mneme.js';
export type { MnemePolicy, PolicyOptions } from './core/policy.js';
export type { GetInput, ListFilter, MemoryActionInput, RememberInput, UpdateInput } from './core/schemas.js';
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
