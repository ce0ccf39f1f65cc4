import { describe, expect, it } from 'vitest';
import { namedSpeakers, otherSpeakerFactor, speaksOfTheAsker } from './named-speakers.js';

const speakers = [
  { id: 'u1', name: 'Caroline' },
  { id: 'u2', name: 'Melanie Stone' },
  { id: 'u3', name: 'Al' },
];

describe('namedSpeakers', () => {
  it('finds the speaker a question names, possessive and case aside', () => {
    expect([...namedSpeakers('What did Caroline research?', speakers)]).toEqual(['u1']);
    expect([...namedSpeakers("What are MELANIE's pets' names?", speakers)]).toEqual(['u2']);
  });

  it('names a speaker by any word of a name of several words', () => {
    expect([...namedSpeakers('Where does Stone live?', speakers)]).toEqual(['u2']);
  });

  it('names every speaker a question names, and none when it names nobody', () => {
    expect([...namedSpeakers('What have Caroline and Melanie both painted?', speakers)].sort()).toEqual(['u1', 'u2']);
    expect(namedSpeakers('Where should we eat tonight?', speakers).size).toBe(0);
  });

  it('ignores names shorter than three letters and words that only contain a name', () => {
    expect(namedSpeakers('Al said what about the rally?', speakers).size).toBe(0);
    expect(namedSpeakers('Is Carolines a restaurant?', speakers).size).toBe(0);
  });

  it('matches a user without a display name by their id', () => {
    expect([...namedSpeakers('what did mira say', [{ id: 'mira', name: 'mira' }])]).toEqual(['mira']);
  });
});

describe('speaksOfTheAsker', () => {
  it('reads a question in the first person singular as about the one asking', () => {
    for (const query of [
      'What did I say about the trip?',
      'when is my dentist appointment',
      'Remind me what Sam recommended',
      "What was I'm-not-sure-what called?",
      'Which of these is mine?',
      'i told you about it, right?',
    ]) {
      expect(speaksOfTheAsker(query)).toBe(true);
    }
  });

  it('reads no asker in a question about others, about a group, or in words that only contain "i" or "me"', () => {
    for (const query of [
      'What did Caroline research?',
      'Where should we eat tonight?',
      'What is our standup time?',
      'Is the meeting in Iceland?',
      'Which memes did Sam send?',
    ]) {
      expect(speaksOfTheAsker(query)).toBe(false);
    }
  });
});

describe('otherSpeakerFactor', () => {
  const named = new Set(['u1']);

  const turn = (userId: string | null) => ({ userId, category: 'exchange' });

  it("weighs another user's conversation turn when the query names someone", () => {
    expect(otherSpeakerFactor(turn('u2'), named, 0.9)).toBe(0.9);
  });

  it("leaves the named speaker's turns, turns of no user and queries that name nobody at 1", () => {
    expect(otherSpeakerFactor(turn('u1'), named, 0.9)).toBe(1);
    expect(otherSpeakerFactor(turn(null), named, 0.9)).toBe(1);
    expect(otherSpeakerFactor(turn('u2'), new Set(), 0.9)).toBe(1);
  });

  it('leaves facts, events, preferences and episodes at 1: they name their subject in their text', () => {
    for (const category of ['fact', 'event', 'preference', 'episode']) {
      expect(otherSpeakerFactor({ userId: 'u2', category }, named, 0.9)).toBe(1);
    }
  });
});
