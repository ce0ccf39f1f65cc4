import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../errors.js';
import { resolvePolicy } from '../policy.js';
import { ConversationTriggerSchema, conversationTriggerReason, isSkippedMessage } from './ingest-policy.js';

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
      extractionBatchMessages: 64,
      extractionBatchMs: 50,
      exchangeImportance: 0.5,
      chatCommands: true,
      skip: { maxChars: 0, slashPrefixed: false },
    });
    expect(() => resolvePolicy({ ingest: { chunkWords: 50, chunkOverlapWords: 50 } })).toThrow(
      expect.objectContaining({ code: ErrorCode.InvalidInput, message: expect.stringMatching(/chunkOverlapWords/) }),
    );
    expect(() => resolvePolicy({ ingest: { extractionBatchMessages: 0 } })).toThrow(
      expect.objectContaining({
        code: ErrorCode.InvalidInput,
        message: expect.stringMatching(/extractionBatchMessages/),
      }),
    );
  });
});

describe('the skip rule', () => {
  it('skips nothing by default', () => {
    const rule = resolvePolicy().ingest.skip;
    expect(isSkippedMessage('ok', rule)).toBe(false);
    expect(isSkippedMessage('/remember I am left-handed', rule)).toBe(false);
  });

  it('skips a message of at most maxChars characters, spaces aside, and one starting with / when asked', () => {
    const rule = resolvePolicy({ ingest: { skip: { maxChars: 20, slashPrefixed: true } } }).ingest.skip;
    expect(isSkippedMessage('   ok thanks   ', rule)).toBe(true);
    expect(isSkippedMessage('x'.repeat(20), rule)).toBe(true);
    expect(isSkippedMessage('x'.repeat(21), rule)).toBe(false);
    expect(isSkippedMessage('  /help me with the deployment checklist', rule)).toBe(true);
    expect(isSkippedMessage('the path is /usr/local/bin on this machine', rule)).toBe(false);
    const shortOnly = resolvePolicy({ ingest: { skip: { maxChars: 5 } } }).ingest.skip;
    expect(isSkippedMessage('/remember I am left-handed', shortOnly)).toBe(false);
  });

  it('refuses a negative maxChars, an exchange importance outside 0..1 and settings that are not booleans', () => {
    for (const ingest of [
      { skip: { maxChars: -1 } },
      { skip: { maxChars: 2.5 } },
      { skip: { slashPrefixed: 'yes' } },
      { exchangeImportance: 1.5 },
      { exchangeImportance: -0.1 },
      { chatCommands: 'no' },
    ]) {
      expect(() => resolvePolicy({ ingest } as never)).toThrow(
        expect.objectContaining({ code: ErrorCode.InvalidInput }),
      );
    }
  });
});
