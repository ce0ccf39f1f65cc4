import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { mergeRecalls, type RecallResult } from '../src/index.js';
import { createFixedClock } from '../src/testing.js';

// Attack (session 5, wt-attack5): mergeRecalls, as the README recommends it for "an application answering
// for several people at once (the members of a room)".
const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((mneme) => mneme.close()));
});

describe('attack5: recalls of several viewers merged', () => {
  it("puts one member's personal memory, from a conversation the others never saw, in the room's merged ranking (only its scope and userId tell)", async () => {
    const mneme = await createMneme({ path: ':memory:', clock: createFixedClock('2026-11-30T09:00:00Z') });
    engines.push(mneme);
    const at = (minutes: number) => new Date(Date.parse('2024-03-01T10:00:00Z') + minutes * 60_000).toISOString();
    // Ann, alone with the assistant.
    await mneme.ingest({
      channelId: 'dm-ann',
      sender: 'ann',
      senderName: 'Ann',
      content: 'I am secretly interviewing at Globex for a new job next week',
      createdAt: at(0),
    });
    // The room Ann and Bo share.
    await mneme.ingest({
      channelId: 'room-1',
      sender: 'bo',
      senderName: 'Bo',
      content: 'Any news about jobs?',
      createdAt: at(5),
    });
    await mneme.whenIdle();
    const query = 'Is Ann interviewing for a new job?';
    const results: RecallResult[] = [];
    for (const userId of ['ann', 'bo']) {
      results.push(await mneme.recall({ query, viewer: { userId, channelId: 'room-1' }, topK: 5, inspect: true }));
    }
    const [asAnn, asBo] = results;
    const secret = asAnn?.hits.find((hit) => hit.memory.content.includes('Globex'));
    expect(secret).toBeDefined();
    // Bo may not see it...
    expect(asBo?.hits.some((hit) => hit.memory.content.includes('Globex'))).toBe(false);
    // ...and the merged ranking holds it: it is for a reader who may see every viewer's memories, never for a
    // reply to the room (the README and mergeRecalls' documentation say so since this attack).
    const merged = mergeRecalls(results, 5);
    const found = merged.find((hit) => hit.memory.content.includes('Globex'));
    expect(found?.memory).toMatchObject({ scope: 'personal', userId: 'ann' });
  });

  it('refuses results that are not recall results with INVALID_INPUT, as it refuses a bad topK', () => {
    let error: unknown;
    try {
      mergeRecalls([{ hits: undefined as never }], 5);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toMatchObject({ code: 'INVALID_INPUT' });
  });
});
