import type { EmbeddingPurpose } from './embedding-model.js';

/** Native vector lengths of common embedding models, by name without tag or organisation. */
const knownDimensions: Record<string, number> = {
  'nomic-embed-text': 768,
  'nomic-embed-text-v1': 768,
  'nomic-embed-text-v1.5': 768,
  'mxbai-embed-large': 1024,
  'mxbai-embed-large-v1': 1024,
  'all-minilm': 384,
  'all-minilm-l6-v2': 384,
  'all-minilm-l12-v2': 384,
  'bge-small-en-v1.5': 384,
  'bge-base-en-v1.5': 768,
  'bge-large-en-v1.5': 1024,
  'bge-m3': 1024,
  'snowflake-arctic-embed': 1024,
  'multilingual-e5-small': 384,
  'multilingual-e5-base': 768,
  'multilingual-e5-large': 1024,
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
};

/** `Xenova/all-MiniLM-L6-v2` -> `all-minilm-l6-v2`; `nomic-embed-text:latest` -> `nomic-embed-text`. */
function baseName(model: string): string {
  const withoutOrganisation = model.slice(model.lastIndexOf('/') + 1);
  const tag = withoutOrganisation.indexOf(':');
  return (tag === -1 ? withoutOrganisation : withoutOrganisation.slice(0, tag)).toLowerCase();
}

/** The native vector length of a well-known embedding model, or undefined. */
export function knownEmbeddingDimensions(model: string): number | undefined {
  return knownDimensions[baseName(model)];
}

/**
 * The text some models expect before each input, by purpose: nomic models `search_document: ` and
 * `search_query: `, e5 models `passage: ` and `query: `. Empty for every other model.
 */
export function purposePrefix(model: string, purpose: EmbeddingPurpose): string {
  const name = baseName(model);
  if (name.startsWith('nomic-embed')) return purpose === 'query' ? 'search_query: ' : 'search_document: ';
  if (name.includes('e5-')) return purpose === 'query' ? 'query: ' : 'passage: ';
  return '';
}

/** The model name as recorded in ids: `nomic-embed-text:latest` and `nomic-embed-text` are one model. */
export function canonicalModelName(model: string): string {
  return model.endsWith(':latest') ? model.slice(0, -':latest'.length) : model;
}
