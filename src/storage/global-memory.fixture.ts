import type { NewMemory } from './memory-store.js';

/** A global memory without a vector, for storage tests; override what the test is about. */
export function globalMemory(content: string, overrides: Partial<NewMemory> = {}): NewMemory {
  return {
    content,
    category: 'fact',
    sector: 'semantic',
    scope: 'global',
    owner: 'global',
    userId: null,
    channelId: null,
    projectId: null,
    topicId: null,
    source: 'manual',
    importance: 0.5,
    pinned: false,
    sourceMessageIds: [],
    sourceIds: [],
    embedding: null,
    ...overrides,
  };
}
