import type { PolicyOptions } from './policy.js';

/** A complete, named policy: one of the memory designs mneme unifies, or mneme's own default. */
export interface Preset {
  /** The design it reproduces. */
  readonly from: string;
  /** One line on what it does. */
  readonly summary: string;
  /** What differs from the policy's defaults; everything else is the default. */
  readonly policy: PolicyOptions;
}

/**
 * The presets, by name. A database stores its preset (and any setting changed on top of it) and every
 * face opens it under that policy; `mneme` is the default, today's measured combination.
 */
export const presets = {
  mneme: {
    from: "mneme's own (the four designs combined, as measured in docs/evaluation.md)",
    summary:
      'facts and exchange chunks, hybrid recall, Ebbinghaus decay, episodes, consolidation, links and dream, the mneme block',
    policy: {},
  },
  'matrix-bot': {
    from: 'the Matrix-bot memory',
    summary:
      'facts extracted per message (Jaccard 0.35 dedup) in personal, room and global scopes, Ebbinghaus decay, episodes, consolidation, semantic links with 1-hop expansion, dream',
    policy: {
      decay: 'ebbinghaus',
      recall: { mode: 'hybrid', graphNeighbours: 3 },
      context: { format: 'relevant-memories', conversationAware: false, minRelevance: 0 },
      ingest: {
        extraction: true,
        exchangeMemories: false,
        similarityThreshold: 0.35,
        conversation: { enabled: false },
      },
    },
  },
  'scoped-rest': {
    from: 'the scoped REST memory',
    summary:
      'Global, Session and Project scopes, written manually, by conversation extraction and by work extraction; an additive score; topK 5 for context and 10 for search; nothing archived',
    policy: {
      decay: 'recency-only',
      recall: {
        mode: 'hybrid',
        topK: 10,
        weights: { relevance: 1, importance: 1, recency: 1, accessFrequency: 1, scope: 1, pinned: 0 },
        scopeBonus: { session: 1, project: 1, personal: 0.5, room: 0.5, global: 0.5 },
        graphNeighbours: 0,
      },
      context: { format: 'scoped-rest', topK: 5, conversationAware: false, minRelevance: 0 },
      ingest: { extraction: false, exchangeMemories: false, chatCommands: false },
      maintenance: { tasks: [] },
    },
  },
  'memo-rag': {
    from: 'the Memo RAG memory',
    summary:
      'exchanges chunked 300/50 and embedded with the reply, conversation-aware multi-query hybrid recall, importance steps 1-5 (pinned /remember at 5), consolidation at cosine 0.92',
    policy: {
      decay: 'importance-steps',
      recall: { mode: 'hybrid', graphNeighbours: 0, conversationMessages: 3 },
      context: { format: 'relevant-memories', topK: 5, conversationAware: true, minRelevance: 0 },
      ingest: {
        extraction: false,
        exchangeMemories: true,
        chunkWords: 300,
        chunkOverlapWords: 50,
        exchangeImportance: 0.2,
        chatCommands: true,
        conversation: { enabled: false },
      },
      maintenance: { tasks: ['decay', 'consolidate'] },
    },
  },
  salience: {
    from: 'the salience memory',
    summary:
      'semantic memories from signal words and episodic ones from every exchange, short and slash messages skipped, salience x0.98 a day, full-text top 3 + 5 most recently used',
    policy: {
      decay: 'salience',
      recall: { mode: 'recent-first', recentFirst: { textHits: 3, recentHits: 5 }, graphNeighbours: 0 },
      context: { format: 'memory-context', topK: 8, conversationAware: false, minRelevance: 0 },
      ingest: {
        extraction: true,
        exchangeMemories: true,
        chatCommands: false,
        skip: { maxChars: 20, slashPrefixed: true },
        conversation: { enabled: false },
      },
      maintenance: { tasks: ['decay'] },
    },
  },
} as const satisfies Record<string, Preset>;

/** The name of a preset. */
export type PresetName = keyof typeof presets;

/** Every preset name, the default first. */
export const presetNames = Object.keys(presets) as [PresetName, ...PresetName[]];

/** The preset a database gets when nothing else is asked for. */
export const DEFAULT_PRESET: PresetName = 'mneme';
