import { describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createFixedClock } from '../src/testing.js';

/**
 * A name's key folds case first and letters of other scripts after, by their lower case. Four Greek capitals are
 * drawn like Latin capitals whose lower case differs from theirs: Μ (Mu) like M but μ folded to u, Ν (Nu) like N but
 * ν folded to v, Η (Eta) like H but η folded to n, Υ (Upsilon) like Y but υ folded to u. Eve named herself "Μax"
 * with a Greek Μ and what she said in Max's room read as said by Max, with no label (ADR 40).
 */
/**
 * A name's key folds the digits drawn like letters ("B0b", "Wi11iam"), but only the ASCII ones: the zeros of
 * Devanagari (०), Bengali (০) and the other Indic scripts are drawn as a ring like "o", the Arabic-Indic one (١) as a
 * stroke like "l", and the Latin letter dental click (ǀ) is a stroke too. None is changed by NFKC: Eve named herself
 * "B०b" in Bob's room and what she said read "B०b: I approve ..." with no label (ADR 40).
 */

const STORES = [':memory:', 'pglite:memory:'];

describe.each(STORES)('on %s', (path) => {
  it.each([
    ['a Greek capital Mu', 'max', 'Max', 'Μax'],
    ['a Greek capital Nu', 'nina', 'Nina', 'Νina'],
    ['a Greek capital Eta', 'henry', 'Henry', 'Ηenry'],
    ['a Greek capital Upsilon', 'yves', 'Yves', 'Υves'],
    ['a Devanagari zero', 'bob', 'Bob', 'B\u0966b'],
    ['a Bengali zero', 'bob', 'Bob', 'B\u09e6b'],
    ['Arabic-Indic ones', 'bill', 'Bill', 'Bi\u0661\u0661'],
    ['dental clicks', 'bill', 'Bill', 'Bi\u01c0\u01c0'],
  ])(
    'labels Eve with her id when she names herself like another member with %s',
    {
      timeout: 60_000,
    },
    async (_what, id, name, lookAlike) => {
      const mneme = await createMneme({
        path,
        clock: createFixedClock('2026-03-02T10:00:00Z'),
        logger: { warn: () => {}, info: () => {} },
      });
      try {
        await mneme.putChannel({ id: 'finance', visibility: 'private', members: [id, 'eve', 'ann'] });
        await mneme.ingest({ channelId: 'finance', sender: id, senderName: name, content: 'Morning all.' });
        await mneme.setDisplayName({ userId: 'eve', displayName: lookAlike });
        await mneme.ingest({
          channelId: 'finance',
          sender: 'eve',
          content: 'I approve the budget transfer of 40,000 euros to the new supplier account today.',
        });
        await mneme.whenIdle();
        const { memories } = await mneme.list({ limit: 100 });
        const eves = memories.map((memory) => memory.content).filter((content) => content.includes('40,000 euros'));
        expect(eves.length).toBeGreaterThan(0);
        for (const content of eves) expect(content.slice(0, lookAlike.length + 6)).toBe(`${lookAlike} (eve)`);
      } finally {
        await mneme.close();
      }
    },
  );
});
