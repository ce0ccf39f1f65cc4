import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import { createFakeEmbeddingModel } from '../models/fake/fake-embedding-model.js';
import { createFixedClock } from '../testing.js';
import { ErrorCode, MnemeError } from './errors.js';
import type { Mneme } from './mneme.js';
import { MAX_CONTENT_CHARS } from './schemas.js';

describe('the library API', () => {
  let mneme: Mneme;
  const clock = createFixedClock('2024-06-15T12:00:00.000Z');

  beforeEach(async () => {
    mneme = await createMneme({ path: ':memory:', clock, embedder: createFakeEmbeddingModel() });
  });
  afterEach(async () => {
    await mneme.close();
  });

  async function expectRefused(action: Promise<unknown>, code: string, message: RegExp) {
    const before = await mneme.list({ archived: 'include' });
    const error = await action.then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(MnemeError);
    expect(error).toMatchObject({ code, message: expect.stringMatching(message) });
    expect(await mneme.list({ archived: 'include' })).toEqual(before);
  }

  it('remembers with offline defaults: global scope, general category, importance 0.5, source manual', async () => {
    const memory = await mneme.remember({ content: '  The staging server is called kestrel  ' });
    expect(memory).toMatchObject({
      content: 'The staging server is called kestrel',
      scope: 'global',
      category: 'general',
      sector: 'semantic',
      importance: 0.5,
      source: 'manual',
      pinned: false,
      createdAt: '2024-06-15T12:00:00.000Z',
    });
    expect(await mneme.get(memory.id)).toEqual(memory);
  });

  it('gives a memory left without a scope the narrowest its ids name: a user id keeps it to that user', async () => {
    const scopes = [];
    for (const ids of [
      { userId: 'ann' },
      { userId: 'ann', channelId: 'team' },
      { channelId: 'team' },
      { projectId: 'atlas' },
    ]) {
      scopes.push((await mneme.remember({ content: 'The vault code is 4321', ...ids })).scope);
    }
    expect(scopes).toEqual(['personal', 'personal', 'room', 'project']);
    // Bob sees none of Ann's; a scope given is kept.
    const seen = await mneme.list({ viewer: { userId: 'bob' } });
    expect(seen.memories.map((memory) => memory.scope)).toEqual([]);
    expect(await mneme.remember({ content: 'Everyone may know this', scope: 'global', userId: 'ann' })).toMatchObject({
      scope: 'global',
    });
  });

  it('clamps importance to 0..1 on create and on update', async () => {
    const high = await mneme.remember({ content: 'very important', importance: 7 });
    const low = await mneme.remember({ content: 'not important', importance: -3 });
    expect([high.importance, low.importance]).toEqual([1, 0]);
    expect((await mneme.update({ id: low.id, importance: 1.5 })).importance).toBe(1);
    expect((await mneme.update({ id: high.id, importance: -0.1 })).importance).toBe(0);
  });

  it('sets the sector from the category, and accepts any non-empty label', async () => {
    expect((await mneme.remember({ content: 'launch was on Monday', category: 'event' })).sector).toBe('episodic');
    expect((await mneme.remember({ content: 'uses vim', category: 'Tooling' })).category).toBe('tooling');
  });

  it('refuses bad input with a typed error and writes nothing', async () => {
    await mneme.remember({ content: 'an existing memory' });
    await expectRefused(mneme.remember({ content: '   ' }), ErrorCode.InvalidInput, /content must not be empty/);
    await expectRefused(
      mneme.remember({ content: 'x', scope: 'galaxy' as never }),
      ErrorCode.InvalidInput,
      /scope must be one of personal, room, project, session, global/,
    );
    await expectRefused(
      mneme.remember({ content: 'Oz likes tea', scope: 'personal' }),
      ErrorCode.InvalidInput,
      /userId: scope personal needs userId/,
    );
    await expectRefused(
      mneme.remember({ content: 'team fact', scope: 'room' }),
      ErrorCode.InvalidInput,
      /scope room needs channelId/,
    );
    await expectRefused(
      mneme.remember({ content: 'project fact', scope: 'project' }),
      ErrorCode.InvalidInput,
      /scope project needs projectId/,
    );
    await expectRefused(
      mneme.remember({ content: 'topic fact', scope: 'session', topicId: 'no-such-topic' }),
      ErrorCode.InvalidInput,
      /session memories come from conversation extraction/,
    );
    await expectRefused(
      mneme.remember({ content: 'x', importance: 'high' as never }),
      ErrorCode.InvalidInput,
      /importance must be a number/,
    );
    await expectRefused(
      mneme.remember({ content: 'x'.repeat(MAX_CONTENT_CHARS + 1) }),
      ErrorCode.InvalidInput,
      /content is longer than 10000 characters/,
    );
    await expectRefused(
      mneme.remember({ content: 'x', colour: 'blue' } as never),
      ErrorCode.InvalidInput,
      /unknown field colour/,
    );
    await expectRefused(mneme.update({ id: 999 }), ErrorCode.InvalidInput, /nothing to update/);
    await expectRefused(mneme.update({ id: 999, content: 'new' }), ErrorCode.NotFound, /memory 999 does not exist/);
    await expectRefused(
      mneme.update({ id: 'abc', content: 'new' }),
      ErrorCode.InvalidInput,
      /id must be a positive integer/,
    );
    await expectRefused(mneme.forget(12345), ErrorCode.NotFound, /memory 12345 does not exist/);
    await expectRefused(mneme.get(777), ErrorCode.NotFound, /memory 777 does not exist/);
    await expectRefused(mneme.list({ limit: 10_000 }), ErrorCode.InvalidInput, /limit must be at most 500/);
    await expectRefused(mneme.history(0), ErrorCode.InvalidInput, /id must be a positive integer/);
  });

  it('refuses numbers given as text or true, and a memory in a topic that does not exist', async () => {
    await expectRefused(mneme.list({ limit: '10' as never }), ErrorCode.InvalidInput, /limit must be a number/);
    await expectRefused(mneme.list({ offset: true as never }), ErrorCode.InvalidInput, /offset must be a number/);
    await expectRefused(
      mneme.recall({ query: 'x', topK: true as never }),
      ErrorCode.InvalidInput,
      /topK must be a number/,
    );
    await expectRefused(
      mneme.context({ query: 'x', topK: '5' as never }),
      ErrorCode.InvalidInput,
      /topK must be a number/,
    );
    await expectRefused(
      mneme.remember({ content: 'Oz likes tea', topicId: 'no-such-topic' }),
      ErrorCode.NotFound,
      /topic no-such-topic does not exist; create it with createTopic first/,
    );
    await mneme.createTopic({ id: 'planning' });
    expect((await mneme.remember({ content: 'Oz likes tea', topicId: 'planning' })).topicId).toBe('planning');
  });

  it('keeps every version: edits, forget and restore, with the actor', async () => {
    const memory = await mneme.remember({ content: 'Oz uses a Mac', actor: 'setup' });
    clock.advance(60_000);
    await mneme.update({ id: memory.id, content: 'Oz uses a ThinkPad', actor: 'oz', reason: 'new laptop' });
    clock.advance(60_000);
    const forgotten = await mneme.forget({ id: memory.id, actor: 'oz' });
    expect(forgotten.archivedAt).toBe('2024-06-15T12:02:00.000Z');
    expect((await mneme.list()).memories).toEqual([]);
    await expect(mneme.update({ id: memory.id, importance: 1 })).rejects.toMatchObject({ code: ErrorCode.Conflict });
    const restored = await mneme.restore(memory.id);
    expect(restored.archivedAt).toBeNull();
    expect(restored.embeddingModel).toBe('fake-64');
    const history = await mneme.history(memory.id);
    expect(history.map((version) => `${version.action}:${version.actor ?? '-'}`)).toEqual([
      'create:setup',
      'update:oz',
      'archive:oz',
      'restore:-',
    ]);
    expect(history[1]?.changes).toEqual({ content: { from: 'Oz uses a Mac', to: 'Oz uses a ThinkPad' } });
  });

  it('re-embeds on a content edit and keeps the vector on other edits', async () => {
    const embedder = createFakeEmbeddingModel();
    const engine = await createMneme({ path: ':memory:', clock, embedder });
    const memory = await engine.remember({ content: 'first text' });
    await engine.update({ id: memory.id, importance: 0.9 });
    await engine.update({ id: memory.id, content: 'second text' });
    expect(embedder.calls.map((call) => [call.texts, call.purpose])).toEqual([
      [['first text'], 'document'],
      [['second text'], 'document'],
    ]);
    expect((await engine.get(memory.id)).embeddingModel).toBe('fake-64');
    await engine.close();
  });

  it('stores a memory without a vector when the model fails, and says so', async () => {
    const warnings: string[] = [];
    const engine = await createMneme({
      path: ':memory:',
      embedder: {
        modelId: 'broken',
        dimensions: 8,
        embed: async () => {
          throw new Error('connection refused');
        },
      },
      logger: { warn: (message) => warnings.push(message) },
    });
    const memory = await engine.remember({ content: 'kept anyway' });
    expect(memory.embeddingModel).toBeNull();
    expect(warnings).toEqual([expect.stringContaining('connection refused')]);
    await engine.close();
  });

  it('hides memories a viewer may not see from get and list', async () => {
    const annSecret = await mneme.remember({ content: 'Ann is allergic to nuts', scope: 'personal', userId: 'ann' });
    const roomNote = await mneme.remember({ content: 'standup at 9', scope: 'room', channelId: 'alpha' });
    const projectNote = await mneme.remember({ content: 'deploy with make', scope: 'project', projectId: 'apollo' });
    await mneme.remember({ content: 'office closes at 6' });

    const bob = { userId: 'bob', channelId: 'beta', projectId: 'zeus' };
    for (const id of [annSecret.id, roomNote.id, projectNote.id]) {
      await expect(mneme.get({ id, viewer: bob })).rejects.toMatchObject({ code: ErrorCode.NotFound });
    }
    expect((await mneme.list({ viewer: bob })).memories.map((memory) => memory.content)).toEqual([
      'office closes at 6',
    ]);
    const ann = { userId: 'ann', channelId: 'alpha', projectId: 'apollo' };
    expect((await mneme.list({ viewer: ann })).total).toBe(4);
    expect((await mneme.get({ id: annSecret.id, viewer: ann })).content).toBe('Ann is allergic to nuts');
  });

  it('purges one user and reports what went', async () => {
    await mneme.remember({ content: 'Ann likes sailing', scope: 'personal', userId: 'ann' });
    await mneme.remember({ content: 'Bob likes rowing', scope: 'personal', userId: 'bob' });
    const report = await mneme.purgeUser('ann');
    expect(report).toMatchObject({ userId: 'ann', memories: 1, vectors: 1, versions: 1 });
    expect((await mneme.list({ archived: 'include' })).memories.map((memory) => memory.content)).toEqual([
      'Bob likes rowing',
    ]);
    await expect(mneme.purgeUser('  ')).rejects.toMatchObject({ code: ErrorCode.InvalidInput });
  });

  it('extracts the next message after a purge of the user who said the newest ones, and gives out no id twice', async () => {
    await mneme.putChannel({ id: 'c1', visibility: 'private', members: ['ann', 'bob'] });
    await mneme.ingest({
      channelId: 'c1',
      sender: 'ann',
      role: 'user',
      content: 'I live in Lisbon and I love surfing.',
    });
    const bobs = await mneme.ingest({
      channelId: 'c1',
      sender: 'bob',
      role: 'user',
      content: 'I work at Initech as a plumber.',
    });
    await mneme.whenIdle();
    const newestMemory = Math.max(...(await mneme.list({ archived: 'include' })).memories.map((memory) => memory.id));
    await mneme.purgeUser('bob');

    const next = await mneme.ingest({
      channelId: 'c1',
      sender: 'ann',
      role: 'user',
      content: 'My sister Maria is a pilot in Porto.',
    });
    expect(next.messages[0]?.id).toBeGreaterThan(bobs.messages[0]?.id ?? Number.POSITIVE_INFINITY);
    await mneme.whenIdle();
    const after = (await mneme.list({ archived: 'include' })).memories.filter((memory) => memory.id > newestMemory);
    expect(after.map((memory) => memory.content)).toContain("Ann's sister Maria is a pilot in Porto.");
    const note = await mneme.remember({ content: 'a note after the purge' });
    expect(note.id).toBeGreaterThan(newestMemory);
  });

  it('counts what it holds', async () => {
    await mneme.remember({ content: 'one', pinned: true });
    await mneme.remember({ content: 'two', scope: 'personal', userId: 'oz', category: 'preference' });
    const stats = await mneme.stats();
    expect(stats).toMatchObject({ active: 2, pinned: 1, byScope: { global: 1, personal: 1 }, addedLast7Days: 2 });
  });

  it('refuses to open without a path, or with an unknown policy', async () => {
    await expect(createMneme({ path: '' })).rejects.toMatchObject({ code: ErrorCode.ConfigInvalid });
    await expect(createMneme({ path: ':memory:', policy: { decay: 'forever' as never } })).rejects.toMatchObject({
      code: ErrorCode.InvalidInput,
      message: expect.stringContaining('decay'),
    });
  });
});
