import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

const quiet = { warn: () => {}, info: () => {} };
let mneme: Mneme | undefined;
let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  await mneme?.close();
  server = undefined;
  mneme = undefined;
});

/** The export's records of these types, as objects. */
async function records(engine: Mneme, ...types: string[]): Promise<Array<Record<string, unknown>>> {
  const found: Array<Record<string, unknown>> = [];
  for await (const line of engine.exportData()) {
    const record = JSON.parse(line) as Record<string, unknown>;
    if (types.includes(String(record.type))) found.push(record);
  }
  return found;
}

/**
 * Attack finding (wt-attack15): `createTopic` and `createProject` wrote the topic or project, then its
 * members, each on its own. A request the store refused at the members (on PostgreSQL, a member id with
 * a NUL character: 422, "nothing of the request stored") had already renamed the project and turned its
 * work extraction on (`managed`), or renamed the topic and moved it into another project.
 */
describe('POST /api/projects and /api/topics refused at their members', () => {
  it('change nothing: neither the project nor the topic nor any membership (PostgreSQL, over HTTP)', async () => {
    mneme = await createMneme({ path: 'pglite:memory:', logger: quiet });
    server = await startHttpServer({ mneme, port: 0 });
    const post = async (path: string, body: unknown) =>
      (
        await fetch(`${server?.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).status;
    expect(await post('/api/projects', { id: 'launch', name: 'Launch', members: ['ann'] })).toBe(201);
    expect(await post('/api/projects', { id: 'other', name: 'Other', members: ['bob'] })).toBe(201);
    expect(await post('/api/topics', { id: 'plans', title: 'Plans', projectId: 'launch', members: ['ann'] })).toBe(201);
    const before = await records(mneme, 'project', 'topic', 'membership');

    expect(
      await post('/api/projects', { id: 'launch', name: 'Renamed', managed: true, members: ['ann', 'x\u0000'] }),
    ).toBe(422);
    expect(
      await post('/api/topics', { id: 'plans', title: 'Moved', projectId: 'other', members: ['bob', 'y\u0000'] }),
    ).toBe(422);
    expect(await records(mneme, 'project', 'topic', 'membership')).toEqual(before);

    // Without the bad member, each is written whole.
    expect(await post('/api/topics', { id: 'plans', title: 'Moved', projectId: 'other', members: ['bob'] })).toBe(201);
    expect(await records(mneme, 'topic')).toMatchObject([{ id: 'plans', title: 'Moved', projectId: 'other' }]);
    expect((await records(mneme, 'membership')).filter((member) => member.kind === 'topic')).toMatchObject([
      { spaceId: 'plans', userId: 'bob' },
    ]);
  }, 60_000);
});
