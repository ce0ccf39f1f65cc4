import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFixedClock } from '../src/testing.js';

/**
 * wt-crash21: requests the API documents as valid must not be refused. `POST /api/maintenance/run` takes
 * `tasks: "none"` (MaintainRequestSchema: only the audience checks every call makes; the scheduler calls it so), the
 * corpus's refusal of an unknown task names it, and the OpenAPI document lists it; the route parses the body (which
 * turns "none" into an empty list), then hands the parsed body to `maintain`, which parses it again and refuses the
 * empty list: "give at least one task".
 */
describe('the maintenance route with the task list none', () => {
  let mneme: Mneme;
  let app: ReturnType<typeof createHttpApp>;
  const errors: unknown[] = [];
  beforeEach(async () => {
    mneme = await createMneme({ path: ':memory:', clock: createFixedClock('2024-06-15T12:00:00.000Z') });
    app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: (error) => errors.push(error) });
  });
  afterEach(async () => {
    await mneme.close();
  });

  it('is accepted by the library', async () => {
    expect(await mneme.maintain({ tasks: 'none' })).toEqual({ now: '2024-06-15T12:00:00.000Z' });
  });

  it('is answered 200 over HTTP as the library answers it, not refused as an empty list', async () => {
    const response = await app.request('/api/maintenance/run', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: 'none' }),
    });
    const text = await response.text();
    expect(text).not.toContain('give at least one task');
    expect(response.status).toBe(200);
    expect(JSON.parse(text)).toEqual({ now: '2024-06-15T12:00:00.000Z' });
  });
});
