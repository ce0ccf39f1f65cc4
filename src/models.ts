/** mneme's model providers: Ollama, OpenAI-compatible endpoints, local ONNX, and the chat-model maintenance roles. */
export { createChatDreamer } from './models/chat/chat-dreamer.js';
export { createChatEpisodeSummariser } from './models/chat/chat-episode-summariser.js';
export { type ChatFactExtractorOptions, createChatFactExtractor } from './models/chat/chat-fact-extractor.js';
export { createChatMemoryMerger } from './models/chat/chat-memory-merger.js';
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
