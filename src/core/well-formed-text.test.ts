import { describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import { clip } from '../models/offline/offline-text.js';
import { isMnemeError } from './errors.js';
import { clipChars, clipQuery, MAX_QUERY_CHARS } from './schemas.js';

// Attack finding (wt-attack, 2026-12-01): a lone surrogate was accepted and stored as bytes that are not
// UTF-8 (read back as three U+FFFD), so what was acknowledged was not what had been sent.
describe('ill-formed text (a lone UTF-16 surrogate)', () => {
  it('is refused by the library with INVALID_INPUT naming the field, and nothing is written', async () => {
    const mneme = await createMneme({ path: ':memory:' });
    try {
      const remembered = mneme.remember({ content: 'Ann likes \ud800 tea', scope: 'personal', userId: 'ann' });
      await expect(remembered).rejects.toSatisfy(
        (error) =>
          isMnemeError(error, 'INVALID_INPUT') &&
          /^invalid memory: content: text must be well-formed/.test(error.message),
      );
      const ingested = mneme.ingest({ channelId: 'general\udfff', sender: 'ann', content: 'hello' });
      await expect(ingested).rejects.toSatisfy((error) => isMnemeError(error, 'INVALID_INPUT'));
      expect((await mneme.list({})).total).toBe(0);
      expect(await mneme.channels()).toEqual([]);
      const emoji = await mneme.remember({ content: 'Ann likes \ud83c\udf75', scope: 'personal', userId: 'ann' });
      expect(emoji.content).toBe('Ann likes 🍵');
    } finally {
      await mneme.close();
    }
  });

  it('is never made by clipping a long query between the halves of an emoji', () => {
    const pairAtTheCut = `${'a'.repeat(MAX_QUERY_CHARS - 1)}🍵 tea`;
    expect(clipQuery(pairAtTheCut)).toBe('a'.repeat(MAX_QUERY_CHARS - 1));
    const pairAtTheStart = `tea 🍵${'a'.repeat(MAX_QUERY_CHARS - 1)}`;
    expect(clipQuery(pairAtTheStart, 'end')).toBe('a'.repeat(MAX_QUERY_CHARS - 1));
    expect(clipQuery('short 🍵')).toBe('short 🍵');
    expect(clipQuery(`${'b'.repeat(MAX_QUERY_CHARS)}🍵`)).toBe('b'.repeat(MAX_QUERY_CHARS));
  });

  it('is never made by the short descriptions and summaries cut from a memory', () => {
    // The MCP resource list describes a memory by its first 200 characters; episode summaries are clipped too.
    const emojiAtTheCut = `${'a'.repeat(199)}🍵 tea`;
    expect(clipChars(emojiAtTheCut, 200)).toBe('a'.repeat(199));
    expect(clip(`${'b'.repeat(98)}🍵${'c'.repeat(20)}`, 100)).toBe(`${'b'.repeat(98)}…`);
    expect(clip('tea 🍵 and cake', 100)).toBe('tea 🍵 and cake');
  });
});
