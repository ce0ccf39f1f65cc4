import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../core/errors.js';
import { createScriptedChatModel } from '../fake/scripted-chat-model.js';
import { createChatDreamer, DREAM_PROMPT } from './chat-dreamer.js';
import { createChatEpisodeSummariser, EPISODE_SUMMARY_PROMPT } from './chat-episode-summariser.js';
import { createChatMemoryMerger, MEMORY_MERGE_PROMPT } from './chat-memory-merger.js';

describe('the chat episode summariser', () => {
  it('sends the window with speakers by name and returns the validated summary', async () => {
    const chat = createScriptedChatModel(['{"summary": " Oz planned the Lyon trip with the assistant. "}']);
    const summariser = createChatEpisodeSummariser(chat);
    expect(summariser.id).toBe('chat:scripted');
    const summary = await summariser.summarise({
      channelId: 'general',
      messages: [
        { id: 1, speaker: 'Oz', role: 'user', content: 'Trip to Lyon?', createdAt: '2024-06-15T10:00:00.000Z' },
        { id: 2, speaker: 'bot', role: 'assistant', content: 'Sure.', createdAt: '2024-06-15T10:01:00.000Z' },
      ],
    });
    expect(summary).toEqual({ summary: 'Oz planned the Lyon trip with the assistant.' });
    expect(chat.requests[0]?.messages).toEqual([
      { role: 'system', content: EPISODE_SUMMARY_PROMPT },
      {
        role: 'user',
        content:
          'Channel: general\n\nMessages, oldest first:\n[2024-06-15T10:00:00.000Z] Oz: Trip to Lyon?\n[2024-06-15T10:01:00.000Z] the assistant: Sure.',
      },
    ]);
    expect(chat.requests[0]?.jsonSchema?.name).toBe('episode');
  });
});

describe('the chat memory merger', () => {
  it('sends the cluster oldest first and returns one merged statement', async () => {
    const chat = createScriptedChatModel(['{"content": "Oz lives in Lyon and works at the bakery"}']);
    const merged = await createChatMemoryMerger(chat).merge({
      memories: [
        {
          id: 1,
          content: 'Oz lives in Lyon',
          category: 'fact',
          importance: 0.5,
          createdAt: '2024-06-01T00:00:00.000Z',
        },
        {
          id: 2,
          content: 'Oz works at the bakery in Lyon',
          category: 'fact',
          importance: 0.5,
          createdAt: '2024-06-02T00:00:00.000Z',
        },
      ],
    });
    expect(merged).toEqual({ content: 'Oz lives in Lyon and works at the bakery' });
    expect(chat.requests[0]?.messages[0]?.content).toBe(MEMORY_MERGE_PROMPT);
    expect(chat.requests[0]?.messages[1]?.content).toBe(
      'Memories, oldest first:\n- (2024-06-01T00:00:00.000Z, fact) Oz lives in Lyon\n- (2024-06-02T00:00:00.000Z, fact) Oz works at the bakery in Lyon',
    );
  });

  it('fails with MODEL_FAILED after two empty statements', async () => {
    const chat = createScriptedChatModel(['{"content": ""}', '{"content": "  "}']);
    await expect(
      createChatMemoryMerger(chat).merge({
        memories: [{ id: 1, content: 'x', category: 'fact', importance: 0.5, createdAt: '2024-06-01T00:00:00.000Z' }],
      }),
    ).rejects.toMatchObject({ code: ErrorCode.ModelFailed });
  });
});

describe('the chat dreamer', () => {
  it('lists memories with their ids and returns insights with their sources', async () => {
    const chat = createScriptedChatModel(['[{"content": "Oz cooks Italian food most weekends", "sourceIds": [1, 2]}]']);
    const insights = await createChatDreamer(chat).dream({
      scope: 'personal',
      memories: [
        { id: 1, content: 'Oz made risotto on Saturday', category: 'event', createdAt: '2024-06-01T00:00:00.000Z' },
        { id: 2, content: 'Oz made lasagne on Sunday', category: 'event', createdAt: '2024-06-09T00:00:00.000Z' },
      ],
    });
    expect(insights).toEqual([
      { content: 'Oz cooks Italian food most weekends', category: 'pattern', sourceIds: [1, 2] },
    ]);
    expect(chat.requests[0]?.messages[0]?.content).toBe(DREAM_PROMPT);
    expect(chat.requests[0]?.messages[1]?.content).toContain(
      '#2 (2024-06-09T00:00:00.000Z, event) Oz made lasagne on Sunday',
    );
  });
});
