import type { ExtractedFact } from './ports/fact-extractor.js';

/**
 * The scope a fact extracted from a channel's message may have (ADR 5): never wider than the
 * channel's audience. An extractor (offline or a chat model) proposes; this decides. `global` stays
 * global only in a channel an administrator marked public; elsewhere it becomes `room`, seen by the
 * channel's members, who could read the message it came from. A fact told by an extractor that was shown the
 * speaker's personal memories (`shownPersonal`: a chat model, where the speaker alone reads the channel) is the
 * speaker's own, whatever it proposes: it may restate them, and a room's readers change (ADR 46: a member added
 * later read, in the room, what the first member had said elsewhere).
 */
export function scopeWithinAudience(
  scope: ExtractedFact['scope'],
  channelIsPublic: boolean,
  shownPersonal = false,
): ExtractedFact['scope'] {
  if (shownPersonal) return 'personal';
  return scope === 'global' && !channelIsPublic ? 'room' : scope;
}
