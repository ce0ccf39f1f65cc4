import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFixedClock } from '../src/testing.js';
import { closeEngineStores, engineStores, openMaintenanceEngine, prepareEngineStore } from './maintenance-engine.js';

/**
 * Attack 25 (time): the dates users send. `createdAt` was read with `new Date(text)`, which takes February 30 for
 * March 1, "0" for the year 2000, "foo 2024" for 2024 and a time without an offset in the time zone of the machine
 * that runs mneme; and a number with a fraction of a millisecond went to the store as it came, which SQLite kept
 * and PostgreSQL refused with STORE_FAILED (an HTTP 500). Each is now a clear INVALID_INPUT that appends nothing,
 * the same on every store.
 */
const refused: ReadonlyArray<[string, string | number, RegExp]> = [
  ['February 30', '2024-02-30T10:00:00Z', /has no day 30 in month 02 of 2024/],
  ['February 29 of a year that is not a leap year', '2023-02-29T10:00:00Z', /has no day 29/],
  ['April 31 as a date alone', '2024-04-31', /has no day 31/],
  ['a lone number as text', '0', /is not an ISO 8601 time/],
  ['words around a year', 'foo 2024', /is not an ISO 8601 time/],
  ['a date in the American order', '12/31/2024', /is not an ISO 8601 time/],
  ['a time without a UTC offset', '2024-06-15T12:00:00', /has no UTC offset/],
  ['a leap second', '2016-12-31T23:59:60Z', /leap second/],
  ['an hour past the end of the day', '2024-06-15T24:30:00Z', /has no time of day/],
  ['an offset of more than a day', '2024-06-15T12:00:00+24:00', /has no UTC offset \+24:00/],
  ['a fraction of a millisecond', 1_718_452_800_000.25, /whole epoch milliseconds/],
  ['a year of six digits', '+275760-09-13T00:00:00Z', /is not an ISO 8601 time/],
  ['a year before 1000', '0070-01-01', /is before 1970/],
];

const accepted: ReadonlyArray<[string, string | number, string]> = [
  ['a date alone as midnight UTC', '2024-06-15', '2024-06-15T00:00:00.000Z'],
  ['an offset', '2024-06-15T14:00:00.250+02:00', '2024-06-15T12:00:00.250Z'],
  ['an offset without a colon', '2024-06-15T14:00:00+0200', '2024-06-15T12:00:00.000Z'],
  ['a space between date and time and microseconds', '2024-06-15 12:00:00.123456Z', '2024-06-15T12:00:00.123Z'],
  ['February 29 of a leap year', '2024-02-29T10:00:00Z', '2024-02-29T10:00:00.000Z'],
  ['the end of a day as 24:00', '2024-06-15T24:00:00Z', '2024-06-16T00:00:00.000Z'],
  ['whole epoch milliseconds', 1_718_452_800_000, '2024-06-15T12:00:00.000Z'],
  ['the last millisecond of 9999', '9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
];

describe.each(engineStores)('the createdAt of a message on %s', (store) => {
  beforeAll(() => prepareEngineStore(store), 120_000);
  afterAll(() => closeEngineStores());

  it.each(refused)('refuses %s with a clear error and appends nothing', async (_what, createdAt, reason) => {
    const { mneme } = await openMaintenanceEngine({ store });
    const failure = await mneme
      .ingest({ channelId: 'desk', sender: 'ann', content: 'I live in Paris', createdAt })
      .then(
        () => null,
        (error: { code?: string; message?: string }) => error,
      );
    expect(failure?.code).toBe('INVALID_INPUT');
    expect(failure?.message).toMatch(reason);
    expect(await mneme.turns({ channelId: 'desk' })).toEqual([]);
  });

  it.each(accepted)('reads %s as the instant it names', async (_what, createdAt, expected) => {
    const { mneme } = await openMaintenanceEngine({ store });
    const { messages } = await mneme.ingest({
      channelId: 'desk',
      sender: 'ann',
      content: 'I live in Paris',
      createdAt,
    });
    expect(messages[0]?.createdAt).toBe(expected);
  });
});

describe('the createdAt of a message over HTTP on PostgreSQL', () => {
  let mneme: Mneme;
  afterEach(async () => {
    await mneme.close();
  });

  it('answers a fraction of a millisecond and February 30 with 422 problem json, never 500', async () => {
    mneme = await createMneme({ path: 'pglite:memory:', clock: createFixedClock(), logger: { warn: () => {} } });
    const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
    for (const createdAt of [1_718_452_800_000.5, '2024-02-30T10:00:00Z']) {
      const response = await app.request('/api/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/json', host: 'localhost' },
        body: JSON.stringify({ channelId: 'desk', sender: 'ann', content: 'I live in Paris', createdAt }),
      });
      expect(response.status).toBe(422);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
    }
    expect(await mneme.turns({ channelId: 'desk' })).toEqual([]);
  }, 120_000);
});
