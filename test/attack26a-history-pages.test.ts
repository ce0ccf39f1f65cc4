import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { HISTORY_PAGE } from '../src/core/schemas.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

// Every edit of a memory keeps a version, and a user key may edit its own memories as often as it likes. The history
// was answered whole: 3,000 edits of a memory of 10,000 characters made GET .../history 66 MB, built in one turn of
// the event loop (3.7 s during which no other user was answered, 400 MB more), and thousands more past what one
// string may hold. The HTTP API and MCP now answer a page at a time.

const EDITS = 250;

let mneme: Mneme;
let server: RunningHttpServer;
let bob: string;
let memoryId: number;

beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:' });
  bob = (await mneme.apiKeys.create({ label: 'bob app', userId: 'bob' })).key;
  const asBob = mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
  const memory = await asBob.remember({ content: 'Bob keeps bees on the roof', scope: 'personal', userId: 'bob' });
  memoryId = memory.id;
  for (let edit = 1; edit <= EDITS; edit += 1) {
    await asBob.update({ id: memoryId, content: `Bob keeps ${edit} hives of bees on the roof` });
  }
  server = await startHttpServer({ mneme, port: 0, logError: () => {} });
});

afterAll(async () => {
  await server.close();
  await mneme.close();
});

async function history(query = '') {
  const response = await fetch(`${server.url}/api/memories/${memoryId}/history${query}`, {
    headers: { authorization: `Bearer ${bob}` },
  });
  return { status: response.status, body: (await response.json()) as Array<{ version: number }> };
}

describe('the history of a memory edited many times', () => {
  it('is answered a page at a time over HTTP, oldest first, the next page after the last version', async () => {
    const first = await history();
    expect(first.status).toBe(200);
    expect(first.body.map((version) => version.version)).toEqual(
      Array.from({ length: HISTORY_PAGE }, (_, index) => index + 1),
    );
    const second = await history(`?after=${HISTORY_PAGE}`);
    expect(second.body.map((version) => version.version)).toEqual(
      Array.from({ length: HISTORY_PAGE }, (_, index) => HISTORY_PAGE + index + 1),
    );
    const rest = await history('?after=200&limit=500');
    expect(rest.body.map((version) => version.version)).toEqual(
      Array.from({ length: EDITS + 1 - 200 }, (_, index) => 201 + index),
    );
  });

  it('refuses a page larger than 500 versions or an after below zero with 422', async () => {
    for (const query of ['?limit=501', '?limit=0', '?after=-1', '?after=x']) {
      const answer = await history(query);
      expect(answer.status, query).toBe(422);
    }
  });

  it('keeps the viewer in the same query string', async () => {
    const mine = await history('?userId=bob&limit=2');
    expect(mine.body.map((version) => version.version)).toEqual([1, 2]);
    expect((await history('?colour=blue')).status).toBe(422);
  });

  it('is answered a page at a time over MCP, saying where the next page starts', async () => {
    const call = async (args: Record<string, unknown>) => {
      const response = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${bob}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'history', arguments: args },
        }),
      });
      const { result } = (await response.json()) as {
        result: { structuredContent: { versions: Array<{ version: number }> }; content: Array<{ text: string }> };
      };
      return result;
    };
    const first = await call({ id: memoryId });
    expect(first.structuredContent.versions).toHaveLength(HISTORY_PAGE);
    expect(first.content[0]?.text).toContain(`call history with after ${HISTORY_PAGE}`);
    const last = await call({ id: memoryId, after: 200 });
    expect(last.structuredContent.versions.map((version) => version.version)[0]).toBe(201);
    expect(last.structuredContent.versions).toHaveLength(EDITS + 1 - 200);
    expect(last.content[0]?.text).not.toContain('More may follow');
  });

  it('is shown by the inspector with a note when its page is full, at the page size the API answers', async () => {
    const views = await (await fetch(`${server.url}/inspector/inspector-views.js`)).text();
    expect(views).toContain(`const HISTORY_PAGE = ${HISTORY_PAGE};`);
    expect(views).toContain('history-more');
  });

  it('is read whole by the library when it asks for no page', async () => {
    expect(await mneme.history(memoryId)).toHaveLength(EDITS + 1);
    expect(await mneme.history({ id: memoryId, after: EDITS - 1 })).toHaveLength(2);
  });
});
