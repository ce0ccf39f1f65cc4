import { describe, expect, it } from 'vitest';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import type { ExtractionInput } from '../../core/ports/fact-extractor.js';
import { createScriptedChatModel } from '../fake/scripted-chat-model.js';
import { createChatFactExtractor, FACT_EXTRACTION_PROMPT } from './chat-fact-extractor.js';

const input: ExtractionInput = {
  speaker: { userId: 'u1', displayName: 'Oz' },
  channelId: 'general',
  userMessage: 'I moved to Lyon last month, and our team ships on Fridays.',
  assistantReply: 'Congratulations on the move!',
  related: [{ id: 7, content: 'Oz prefers dark mode' }],
};

describe('the chat fact extractor', () => {
  it('asks for facts about the named speaker, showing what is already remembered and the exchange', async () => {
    const chat = createScriptedChatModel(['{"facts": []}'], { modelId: 'ollama:llama3.2' });
    const extractor = createChatFactExtractor(chat);
    expect(extractor.id).toBe('chat:ollama:llama3.2');
    expect(await extractor.extract(input)).toEqual([]);

    const [system, user] = chat.requests[0]?.messages ?? [];
    expect(system).toEqual({ role: 'system', content: FACT_EXTRACTION_PROMPT });
    expect(FACT_EXTRACTION_PROMPT).toMatch(/Never write "the user"/);
    expect(FACT_EXTRACTION_PROMPT).toMatch(/scope: "personal" .* "room" .* "global"/);
    expect(user?.content).toBe(
      [
        'Speaker: Oz',
        'Channel: general',
        '',
        'Already remembered about Oz:',
        '- Oz prefers dark mode',
        '',
        'Oz said:',
        '"""\nI moved to Lyon last month, and our team ships on Fridays.\n"""',
        '',
        'The assistant replied:',
        '"""\nCongratulations on the move!\n"""',
      ].join('\n'),
    );
    expect(chat.requests[0]?.jsonSchema?.name).toBe('facts');
  });

  it('returns validated facts with their scope, named after the speaker, without repeats of known memories', async () => {
    const chat = createScriptedChatModel([
      JSON.stringify({
        facts: [
          { content: 'The user moved to Lyon last month', category: 'Event', importance: 0.7 },
          { content: "Oz's team ships on Fridays", category: 'fact', importance: 0.5, scope: 'room' },
          { content: 'Oz prefers dark mode.', category: 'preference' },
          { content: 'User likes tea', importance: 3 },
        ],
      }),
    ]);
    expect(await createChatFactExtractor(chat).extract(input)).toEqual([
      { content: 'Oz moved to Lyon last month', category: 'event', importance: 0.7, scope: 'personal' },
      { content: "Oz's team ships on Fridays", category: 'fact', importance: 0.5, scope: 'room' },
      { content: 'Oz likes tea', category: 'fact', importance: 1, scope: 'personal' },
    ]);
  });

  it('says there were no memories yet and leaves out a reply that does not exist', async () => {
    const chat = createScriptedChatModel(['```json\n{"facts": {"content": "Oz is vegetarian"}}\n```']);
    const facts = await createChatFactExtractor(chat).extract({
      ...input,
      related: [],
      assistantReply: null,
      createdAt: '2024-06-15T12:00:00.000Z',
    });
    expect(facts).toEqual([{ content: 'Oz is vegetarian', category: 'fact', importance: 0.5, scope: 'personal' }]);
    expect(chat.requests[0]?.messages[1]?.content).toContain('Channel: general\nSent at: 2024-06-15T12:00:00.000Z\n');
    expect(chat.requests[0]?.messages[1]?.content).toContain('Already remembered about Oz:\n(nothing yet)');
    expect(chat.requests[0]?.messages[1]?.content).not.toContain('assistant replied');
  });

  it('gives no facts, with a warning, when the model twice returns something unusable', async () => {
    const chat = createScriptedChatModel(['no idea', 'still no idea']);
    const warnings: string[] = [];
    const extractor = createChatFactExtractor(chat, { logger: { warn: (text) => warnings.push(text) } });
    expect(await extractor.extract({ ...input, messageId: 7 })).toEqual([]);
    expect(chat.requests).toHaveLength(2);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^no facts kept from message 7 of Oz in general: scripted returned unusable JSON for facts twice/,
      ),
    ]);
  });

  it('fails with MODEL_FAILED when the model itself fails, so the message is tried again', async () => {
    const chat = {
      modelId: 'down',
      complete: async () => {
        throw new MnemeError(ErrorCode.ModelFailed, 'down is not reachable');
      },
    };
    await expect(createChatFactExtractor(chat).extract(input)).rejects.toMatchObject({ code: ErrorCode.ModelFailed });
  });
});
