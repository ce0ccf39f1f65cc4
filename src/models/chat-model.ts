/** One turn of a chat prompt. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatRequest {
  messages: readonly ChatMessage[];
  /**
   * Ask for JSON matching this JSON Schema (Ollama `format`, OpenAI `response_format`). The text
   * that comes back is still validated by the caller: small local models do not always comply.
   */
  jsonSchema?: { name: string; schema: Record<string, unknown> };
  /** 0 unless told otherwise: extraction and summaries should be repeatable. */
  temperature?: number;
}

/** A chat model used for extraction, episode summaries, merges and dream. */
export interface ChatModel {
  /** Stable id, e.g. `ollama:llama3.2`. */
  readonly modelId: string;
  /** The assistant's reply text. */
  complete(request: ChatRequest, options?: { signal?: AbortSignal }): Promise<string>;
}
