import type { EpisodeMessage, EpisodeSummariser } from '../../core/ports/episode-summariser.js';
import { wordSet } from '../../core/similarity.js';
import { clip, sentencesOf, withFullStop } from './offline-text.js';

/** Sentences one offline summary keeps. */
const SUMMARY_SENTENCES = 2;
/** Longest sentence kept whole; longer ones are cut. */
const MAX_SENTENCE_CHARS = 240;

interface Candidate {
  order: number;
  speaker: string;
  isAssistant: boolean;
  text: string;
  words: Set<string>;
}

/**
 * The offline episode summariser: extractive, no model. It keeps the two sentences of the window
 * that together cover the most distinct words (people's own words before the assistant's on a
 * tie), in the order they were said, each attributed by name: `Oz: I moved the deploy to Friday.`
 */
export function createOfflineEpisodeSummariser(): EpisodeSummariser {
  return {
    id: 'offline',
    async summarise({ messages }) {
      const candidates = messages.flatMap((message, index) => candidatesOf(message, index));
      const picked: Candidate[] = [];
      const covered = new Set<string>();
      while (picked.length < SUMMARY_SENTENCES) {
        let best: { candidate: Candidate; gain: number } | null = null;
        for (const candidate of candidates) {
          if (picked.includes(candidate)) continue;
          let gain = 0;
          for (const word of candidate.words) if (!covered.has(word)) gain++;
          if (gain === 0) continue;
          const isBetter =
            best === null ||
            gain > best.gain ||
            (gain === best.gain && best.candidate.isAssistant && !candidate.isAssistant);
          if (isBetter) best = { candidate, gain };
        }
        if (best === null) break;
        picked.push(best.candidate);
        for (const word of best.candidate.words) covered.add(word);
      }
      if (picked.length === 0) {
        const first = messages[0];
        const fallback = first
          ? `${first.speaker}: ${clip(first.content.trim(), MAX_SENTENCE_CHARS)}`
          : 'A conversation.';
        return { summary: withFullStop(fallback) };
      }
      const summary = picked
        .sort((left, right) => left.order - right.order)
        .map((candidate) => `${candidate.speaker}: ${withFullStop(candidate.text)}`)
        .join(' ');
      return { summary };
    },
  };
}

/** The sentences of one message, numbered in the order they were said. */
function candidatesOf(message: EpisodeMessage, index: number): Candidate[] {
  return sentencesOf(message.content).map((sentence, position) => ({
    order: index * 1000 + position,
    speaker: message.speaker,
    isAssistant: message.role === 'assistant',
    text: clip(sentence, MAX_SENTENCE_CHARS),
    words: wordSet(sentence, { ignore: [message.speaker] }),
  }));
}
