import { z } from 'zod';
import { type Dreamer, type DreamInput, DreamInsightsSchema, MAX_DREAM_INSIGHTS } from '../../core/ports/dreamer.js';
import type { ChatMessage, ChatModel } from '../chat-model.js';
import { completeStructured } from './chat-structured-output.js';

/** What the model is asked to return: an object (OpenAI's structured output wants one at the root). */
const DreamReplySchema = z.object({ insights: DreamInsightsSchema });

/** The dream instructions: a few higher-level memories, each resting on listed memories. */
export const DREAM_PROMPT = `You reflect on an assistant's recent memories about one person or group and find what they add up to.

Rules:
- Propose at most ${MAX_DREAM_INSIGHTS} higher-level memories: recurring preferences, habits, patterns, long-running goals. None is fine.
- Each must rest on at least two of the memories below; give their ids in "sourceIds".
- Do not restate a single memory, and do not guess beyond what the memories support.
- Name people as the memories do; never write "the user".
- category: "pattern", "preference" or "fact".
- Reply with JSON only: {"insights": [{"content": "...", "category": "pattern", "sourceIds": [1, 2]}]}.`;

/** The messages sent to the model for one owner's memories. */
export function dreamMessages(input: DreamInput): ChatMessage[] {
  const lines = input.memories.map(
    (memory) => `#${memory.id} (${memory.createdAt}, ${memory.category}) ${memory.content}`,
  );
  return [
    { role: 'system', content: DREAM_PROMPT },
    { role: 'user', content: [`Scope: ${input.scope}`, '', 'Memories, oldest first:', ...lines].join('\n') },
  ];
}

/** A Dreamer backed by a chat model and structured output; MODEL_FAILED reaches the caller. */
export function createChatDreamer(chat: ChatModel): Dreamer {
  return {
    id: `chat:${chat.modelId}`,
    async dream(input, options = {}) {
      const reply = await completeStructured(
        chat,
        { schema: DreamReplySchema, name: 'insights', messages: dreamMessages(input) },
        options,
      );
      return reply.insights;
    },
  };
}
