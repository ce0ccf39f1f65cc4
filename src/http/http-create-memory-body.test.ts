import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import type { Mneme } from '../core/mneme.js';
import { createHttpApp } from './http-app.js';

let mneme: Mneme | undefined;
afterEach(async () => {
  await mneme?.close();
  mneme = undefined;
});

describe('POST /api/memories', () => {
  it('refuses an actor field, which the caller cannot choose, and the OpenAPI document does not offer one', async () => {
    mneme = await createMneme({ path: ':memory:' });
    const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys });
    const response = await app.request('/api/memories', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'The office closes at six', actor: 'someone else' }),
    });
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ code: 'INVALID_INPUT', detail: expect.stringContaining('actor') });
    expect((await mneme.list()).total).toBe(0);

    const document = (await (await app.request('/openapi.json')).json()) as {
      paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: unknown }> } }>>;
      components: { schemas: Record<string, unknown> };
    };
    const body = document.paths['/api/memories']?.post?.requestBody.content['application/json']?.schema as {
      properties?: Record<string, unknown>;
    };
    expect(Object.keys(body.properties ?? {})).toContain('content');
    expect(Object.keys(body.properties ?? {})).not.toContain('actor');
  });

  it('still stores a manual memory with the scope rules, written by the caller', async () => {
    mneme = await createMneme({ path: ':memory:' });
    const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys });
    const post = (body: unknown) =>
      app.request('/api/memories', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await post({ content: 'x', scope: 'project' })).status).toBe(422);
    expect((await post({ content: 'x', scope: 'session', topicId: 't' })).status).toBe(422);
    const created = await post({ content: 'The office closes at six', importance: 3 });
    expect(created.status).toBe(201);
    const memory = (await created.json()) as { id: number; importance: number };
    expect(memory.importance).toBe(1);
    expect((await mneme.history(memory.id))[0]?.actor).toBe('open (no API key was ever created)');
  });
});
