import { describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { nameKey } from '../src/core/name-key.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFixedClock } from '../src/testing.js';

/**
 * The Hangul fillers (U+115F, U+1160, U+3164 and the halfwidth U+FFA0) are letters (category Lo), not format
 * characters, and they are drawn as nothing. A display name refuses invisible characters and a name's key drops
 * them, but the check looked for format characters only and the key kept every letter: Eve named herself
 * "Bob" followed by a Hangul filler, which reads "Bob", and what she said read as said by Bob with no label (ADR 40).
 */

const FILLERS = ['\u3164', '\u115f', '\u1160', '\uffa0'];

describe('a display name with a Hangul filler, a letter drawn as nothing', () => {
  it.each(FILLERS.map((filler) => [filler.codePointAt(0)?.toString(16), filler]))(
    'is refused with a 422 when it holds U+%s',
    async (_code, filler) => {
      const mneme = await createMneme({ path: ':memory:', clock: createFixedClock('2026-03-02T10:00:00Z') });
      try {
        const key = (await mneme.apiKeys.create({ label: 'eve', userId: 'eve' })).key;
        const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
        const renamed = await app.request('/api/users/eve', {
          method: 'PUT',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ displayName: `Bob${filler}` }),
        });
        expect(renamed.status).toBe(422);
        expect(((await renamed.json()) as { detail: string }).detail).toMatch(/displayName must not hold/);
      } finally {
        await mneme.close();
      }
    },
  );

  it.each(FILLERS.map((filler) => [filler.codePointAt(0)?.toString(16), filler]))(
    'keys a name stored before with U+%s as the name without it, so that it is labelled beside Bob',
    (_code, filler) => {
      expect(nameKey(`Bob${filler}`)).toBe(nameKey('Bob'));
      expect(nameKey(`B${filler}ob`)).toBe(nameKey('Bob'));
    },
  );
});
