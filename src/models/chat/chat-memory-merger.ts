import { type MemoryMerger, MergedMemorySchema, type MergeInput } from '../../core/ports/memory-merger.js';
import type { ChatMessage, ChatModel } from '../chat-model.js';
import { completeStructured } from './chat-structured-output.js';

/** The merge instructions: one statement, every distinct detail kept, newer details win. */
export const MEMORY_MERGE_PROMPT = `You merge near-duplicate memories into one.

Rules:
- Write one statement that keeps every distinct detail of the memories below; drop only repetition.
- When two memories disagree, keep the newer one's version.
- Keep names as they are; never write "the user".
- Reply with JSON only: {"content": "..."}.`;

/** The messages sent to the model for one cluster. */
export function memoryMergeMessages(input: MergeInput): ChatMessage[] {
  const lines = input.memories.map((memory) => `- (${memory.createdAt}, ${memory.category}) ${memory.content}`);
  return [
    { role: 'system', content: MEMORY_MERGE_PROMPT },
    { role: 'user', content: ['Memories, oldest first:', ...lines].join('\n') },
  ];
}

/** A MemoryMerger backed by a chat model and structured output; MODEL_FAILED reaches the caller. */
export function createChatMemoryMerger(chat: ChatModel): MemoryMerger {
  return {
    id: `chat:${chat.modelId}`,
    merge: (input, options = {}) =>
      completeStructured(
        chat,
        { schema: MergedMemorySchema, name: 'merged_memory', messages: memoryMergeMessages(input) },
        options,
      ),
  };
}
