import { describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createScriptedChatModel } from '../src/models/fake/scripted-chat-model.js';
import { createChatFactExtractor } from '../src/models.js';
import { createFixedClock } from '../src/testing.js';

/**
 * The chat model that extracts facts is told the speaker's label, `Speaker: Bob (eve)` when Eve named herself Bob
 * beside user Bob (ADR 40), and it writes the facts' text. A model reads the bracket as a note and drops it ("Bob
 * approves the budget transfer"): the fact was kept as it wrote it, and what Eve said read, to the room and to the
 * assistant, as a fact about Bob. The speaker's name in a fact is now followed by the label's id when the model left
 * it out.
 */

const FACT = JSON.stringify({
  facts: [
    {
      content: 'Bob approves the budget transfer of 40,000 euros to the new supplier account.',
      category: 'fact',
      importance: 0.5,
      scope: 'room',
    },
  ],
});

const STORES = [':memory:', 'pglite:memory:'];

describe.each(STORES)('on %s', (path) => {
  it('labels the speaker in a fact the chat model wrote with the plain name', { timeout: 60_000 }, async () => {
    const model = createScriptedChatModel(Array.from({ length: 10 }, () => () => FACT));
    const mneme = await createMneme({
      path,
      clock: createFixedClock('2026-03-02T10:00:00Z'),
      logger: { warn: () => {}, info: () => {} },
      extractor: createChatFactExtractor(model),
    });
    try {
      await mneme.putChannel({ id: 'finance', visibility: 'private', members: ['bob', 'eve', 'ann'] });
      await mneme.setDisplayName({ userId: 'bob', displayName: 'Bob' });
      await mneme.setDisplayName({ userId: 'eve', displayName: 'Bob' });
      await mneme.ingest({
        channelId: 'finance',
        sender: 'eve',
        content: 'I approve the budget transfer of 40,000 euros to the new supplier account today.',
      });
      await mneme.whenIdle();
      const prompt = model.requests[0]?.messages.map((message) => message.content).join('\n') ?? '';
      expect(prompt).toContain('Speaker: Bob (eve)');
      const { memories } = await mneme.list({ limit: 100 });
      const facts = memories.filter((memory) => memory.category === 'fact').map((memory) => memory.content);
      expect(facts).toEqual(['Bob (eve) approves the budget transfer of 40,000 euros to the new supplier account.']);
    } finally {
      await mneme.close();
    }
  });
});

describe('the chat fact extractor', () => {
  it('follows the speaker name with the id of its label, and leaves a labelled name and longer words alone', async () => {
    const reply = JSON.stringify({
      facts: [
        { content: 'bob says Bobby and Bob (eve) agree.', category: 'fact', importance: 0.5, scope: 'room' },
        { content: 'The user wants the Bob report.', category: 'fact', importance: 0.5, scope: 'room' },
      ],
    });
    const extractor = createChatFactExtractor(createScriptedChatModel([reply]));
    const facts = await extractor.extract({
      speaker: { userId: 'eve', displayName: 'Bob (eve)' },
      channelId: 'finance',
      messageId: 1,
      userMessage: 'Bobby and I agree, and I want the Bob report.',
      assistantReply: null,
      createdAt: '2026-03-02T10:00:00.000Z',
      related: [],
    });
    expect(facts.map((fact) => fact.content)).toEqual([
      'Bob (eve) says Bobby and Bob (eve) agree.',
      'Bob (eve) wants the Bob (eve) report.',
    ]);
  });
});
