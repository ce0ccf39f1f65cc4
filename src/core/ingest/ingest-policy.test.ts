import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../errors.js';
import { resolvePolicy } from '../policy.js';
import { ConversationTriggerSchema, conversationTriggerReason } from './ingest-policy.js';

const minute = 60_000;
const rule = ConversationTriggerSchema.parse({});
const at = (...minutes: number[]) => ({ userMessageTimes: minutes.map((value) => value * minute) });

describe('the conversation trigger', () => {
  it('has the documented defaults', () => {
    expect(rule).toEqual({
      enabled: true,
      userMessages: 10,
      minUserMessages: 3,
      elapsedMinutes: 30,
      burstUserMessages: 5,
      burstMinutes: 5,
    });
  });

  it('fires on 10 pending user messages, however slow', () => {
    expect(conversationTriggerReason(at(0, 3, 6, 9, 12, 15, 18, 21, 24), rule)).toBeNull();
    expect(conversationTriggerReason(at(0, 3, 6, 9, 12, 15, 18, 21, 24, 27), rule)).toBe('count');
  });

  it('fires when at least 3 pending user messages span 30 minutes', () => {
    expect(conversationTriggerReason(at(0, 29), rule)).toBeNull();
    expect(conversationTriggerReason(at(0, 15, 29), rule)).toBeNull();
    expect(conversationTriggerReason(at(0, 15, 30), rule)).toBe('elapsed');
  });

  it('fires when 5 user messages arrive within 5 minutes', () => {
    expect(conversationTriggerReason(at(0, 6, 12, 18), rule)).toBeNull();
    expect(conversationTriggerReason(at(0, 1, 2, 3, 4), rule)).toBe('density');
    expect(conversationTriggerReason(at(0, 1, 2, 10, 11, 12, 13), rule)).toBeNull();
    expect(conversationTriggerReason(at(0, 20, 21, 22, 23, 24), rule)).toBe('density');
  });

  it('never fires when turned off or with nothing pending', () => {
    expect(
      conversationTriggerReason(at(...Array.from({ length: 20 }, (_, index) => index)), { ...rule, enabled: false }),
    ).toBeNull();
    expect(conversationTriggerReason(at(), rule)).toBeNull();
  });
});

describe('the ingest policy', () => {
  it('fills every default and refuses an overlap as long as the chunk', () => {
    expect(resolvePolicy().ingest).toMatchObject({
      extraction: true,
      exchangeMemories: true,
      chunkWords: 300,
      chunkOverlapWords: 50,
      similarityThreshold: 0.35,
      turns: 10,
      workEveryUserMessages: 10,
      extractionLeaseSeconds: 30,
    });
    expect(() => resolvePolicy({ ingest: { chunkWords: 50, chunkOverlapWords: 50 } })).toThrow(
      expect.objectContaining({ code: ErrorCode.InvalidInput, message: expect.stringMatching(/chunkOverlapWords/) }),
    );
  });
});
