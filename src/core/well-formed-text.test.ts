import { describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import { isMnemeError } from './errors.js';
import { clipQuery, MAX_QUERY_CHARS } from './schemas.js';

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
});
