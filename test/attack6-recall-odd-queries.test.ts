import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFixedClock } from '../src/testing.js';

// Attack (session 6, wt-attack6) on 30338c1 and c16f1ce: the full-text leg's new statements (a word's
// occurrences from the instance vocabulary, the owners' counts in one statement) under odd queries over HTTP
// with a user's key: never a 5xx, and what ann's key gets back never moves with bob's memories.
const odd = [
  'kestrel',
  'KESTREL kestrels',
  '"kestrel',
  'kestrel"',
  '""',
  'kestrel*',
  '*',
  'NEAR(kestrel field)',
  'near and or not',
  'AND OR NOT NEAR',
  'content:kestrel',
  '^kestrel',
  '-kestrel',
  'kestrel\u0000field',
  '\u0000',
  'café naïve straße',
  'İstanbul',
  '\ud800 kestrel',
  'kestrel \udfff',
  '🦅🦅',
  'e-mail',
  `${'k'.repeat(70)}`,
  `${'é'.repeat(70)}`,
  'x '.repeat(500),
  "don't can't",
  '%_\\',
];

describe('attack6: odd recall queries from a user key', () => {
  let mneme: Mneme;
  let app: ReturnType<typeof createHttpApp>;
  let annKey = '';
  const errors: unknown[] = [];

  beforeAll(async () => {
    mneme = await createMneme({
      path: ':memory:',
      clock: createFixedClock('2024-06-15T12:00:00Z'),
      logger: { warn: () => {}, info: () => {} },
    });
    annKey = (await mneme.apiKeys.create({ label: 'ann-app', userId: 'ann' })).key;
    app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: (error) => errors.push(error) });
    for (const content of [
      'A kestrel hovers over the field near the café',
      'Send the e-mail about İstanbul before noon',
      'My naïve plan: kestrel watching every Sunday',
    ]) {
      await mneme
        .as({ kind: 'user', userId: 'ann', label: 'ann' })
        .remember({ content, scope: 'personal', userId: 'ann' });
    }
  });
  afterAll(async () => {
    await mneme.close();
  });

  async function search(query: string) {
    const response = await app.request('/api/memories/search', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${annKey}` },
      body: JSON.stringify({ query, explain: true, inspect: true }),
    });
    return { status: response.status, body: (await response.json()) as { hits?: unknown[] } };
  }

  it('answers every odd query with a 2xx or a 4xx problem, and the same whatever bob remembers', async () => {
    const before: Array<Awaited<ReturnType<typeof search>>> = [];
    for (const query of odd) before.push(await search(query));
    const statuses = before.map((answer, index) => [odd[index], answer.status]);
    expect(statuses.filter(([, status]) => Number(status) >= 500)).toEqual([]);
    expect(errors).toEqual([]);
    // Bob's memories hold the same words, many times over.
    const bob = mneme.as({ kind: 'user', userId: 'bob', label: 'bob' });
    for (let index = 0; index < 30; index++) {
      await bob.remember({
        content: `kestrel kestrel café e-mail İstanbul naïve near ${'kestrel '.repeat(index % 5)} bob ${index}`,
        scope: 'personal',
        userId: 'bob',
      });
    }
    const after: Array<Awaited<ReturnType<typeof search>>> = [];
    for (const query of odd) after.push(await search(query));
    const strip = (answer: { status: number; body: unknown }) => JSON.stringify(answer);
    const moved = odd.filter(
      (_, index) =>
        strip(before[index] ?? { status: 0, body: null }) !== strip(after[index] ?? { status: 0, body: null }),
    );
    expect(moved).toEqual([]);
    expect(before[0]?.body.hits?.length).toBeGreaterThan(0);
  });
});
