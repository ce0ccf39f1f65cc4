import type { ExtractedFact } from './ports/fact-extractor.js';

/**
 * The scope a fact extracted from a channel's message may have (ADR 5): never wider than the
 * channel's audience. An extractor (offline or a chat model) proposes; this decides. `global` stays
 * global only in a channel an administrator marked public; elsewhere it becomes `room`, seen by the
 * channel's members, who could read the message it came from.
 */
export function scopeWithinAudience(scope: ExtractedFact['scope'], channelIsPublic: boolean): ExtractedFact['scope'] {
  return scope === 'global' && !channelIsPublic ? 'room' : scope;
}
