import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningProxyServer, startProxyServer } from '../src/proxy/proxy-server.js';
import { startFakeUpstream } from './fake-openai-upstream.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack23-proxy-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const running: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of running.splice(0).reverse()) await stop();
});

/**
 * A proxy whose engine runs `meanwhile` right before the proxy's write of an exchange: what another request (an
 * administrator revoking a key, purging a user) does after the proxy checked the key again and before the append.
 * The engine itself is the real one; only the moment is chosen.
 */
async function proxyWith(name: string, meanwhile: (mneme: Mneme) => Promise<void>) {
  const mneme = await createMneme({ path: join(folder, `${name}.db`) });
  const upstream = await startFakeUpstream();
  const log: string[] = [];
  let once = true;
  const engine = new Proxy(mneme, {
    get(target, key, receiver) {
      if (key !== 'ingestExchange') return Reflect.get(target, key, receiver);
      const ingestExchange: Mneme['ingestExchange'] = async (input, options) => {
        if (once) {
          once = false;
          await meanwhile(target);
        }
        return target.ingestExchange(input, options);
      };
      return ingestExchange;
    },
  });
  const proxy: RunningProxyServer = await startProxyServer({
    mneme: engine,
    upstream: upstream.url,
    port: 0,
    log: (line) => log.push(line),
  });
  running.push(
    () => mneme.close(),
    () => upstream.close(),
    () => proxy.close(),
  );
  const chat = (key: string, content: string) =>
    fetch(`${proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content }] }),
    });
  return { mneme, proxy, log, chat };
}

describe('the proxy writes an exchange only while the key it came with is active, as POST /api/exchanges does', () => {
  it('writes nothing for a user key revoked after the proxy checked it and before the exchange was appended', async () => {
    let prefix = '';
    const world = await proxyWith('revoked', async (mneme) => {
      await mneme.apiKeys.revoke(prefix);
    });
    const created = await world.mneme.apiKeys.create({ label: 'ann laptop', userId: 'ann' });
    prefix = created.prefix;

    const response = await world.chat(created.key, 'My locker code is 4711 and I keep it secret');
    expect(response.status).toBe(200);
    await world.proxy.whenIdle();

    expect((await world.mneme.apiKeys.list()).find((key) => key.prefix === prefix)?.revokedAt).not.toBeNull();
    const stored = await world.mneme.messages({ channelId: 'proxy:ann' }).catch(() => ({ messages: [] }));
    expect(stored.messages.map((message) => message.content)).toEqual([]);
    expect(world.log).toEqual([
      expect.stringMatching(/^ingesting the exchange of user ann in channel proxy:ann failed/),
    ]);
  });

  it('writes nothing of a user purged after the proxy checked the key and before the exchange was appended', async () => {
    const world = await proxyWith('purged', async (mneme) => {
      await mneme.purgeUser('ann');
    });
    const created = await world.mneme.apiKeys.create({ label: 'ann laptop', userId: 'ann' });
    await world.mneme.remember({ content: 'Ann was here before', scope: 'personal', userId: 'ann' });

    const response = await world.chat(created.key, 'My home address is 12 Elm Street, please forget me later');
    expect(response.status).toBe(200);
    await world.proxy.whenIdle();
    await world.mneme.whenIdle();

    // The purge erased everything about ann; an exchange the proxy wrote after it would bring her words back.
    const stored = await world.mneme.messages({ channelId: 'proxy:ann' }).catch(() => ({ messages: [] }));
    expect(stored.messages.map((message) => message.content)).toEqual([]);
    expect((await world.mneme.list({ userId: 'ann', archived: 'include' })).total).toBe(0);
  });
});

describe('the first exchange of a user key in its default channel, which the proxy lets it start', () => {
  it('never makes a user key a member of its default channel that an administrator declared without it meanwhile', async () => {
    const world = await proxyWith('declared', async (mneme) => {
      // The operator declares proxy:ann for a review, without ann, while her first reply is on its way.
      await mneme.putChannel({ id: 'proxy:ann', visibility: 'private', members: ['auditor'] });
    });
    const created = await world.mneme.apiKeys.create({ label: 'ann laptop', userId: 'ann' });

    const response = await world.chat(created.key, 'I am planning a surprise party for Bob on Friday');
    expect(response.status).toBe(200);
    await world.proxy.whenIdle();

    // Asked after the declaration, the proxy refuses ann the channel (403); her reply on its way must not join it.
    expect((await world.mneme.channel('proxy:ann')).members).toEqual(['auditor']);
    expect((await world.mneme.messages({ channelId: 'proxy:ann' })).messages).toEqual([]);
  });
});
