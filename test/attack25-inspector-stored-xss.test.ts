import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { type ServeProcess, startServeProcess } from './serve-process.js';

/*
 * Stored XSS against the inspector: ann, a user with a key of her own, and a chat bridge relaying what she says
 * (the administrator's key) store markup as memory content, a category, a display name, a channel id, a topic and
 * message text; the administrator then opens every view in a real Chromium. Each view must show the markup as text:
 * no element of it in the page, no handler run, no `javascript:` link.
 */

const wait = { timeout: 30_000 };
const children: ChildProcess[] = [];
let directory = '';
let serve: ServeProcess;
let browser: Browser;
let page: Page;
let admin = '';
let ann = '';
const dialogs: string[] = [];
const channel = '<img src=x onerror="document.title=`pwned`">javascript:alert(1)';

/** Markup that would run, or leave an element behind, if a view inserted it as HTML. */
const payload = (tag: string) =>
  `<img src=x onerror="document.title='pwned-${tag}'"><script>document.title='pwned-${tag}'</script>` +
  `<svg onload=alert(1)></svg>[x](javascript:alert(1)) <a href="javascript:alert(1)">${tag}</a>`;

async function call(method: string, path: string, body: unknown, key: string): Promise<number> {
  const response = await fetch(`${serve.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.status;
}

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'mneme-xss-'));
  const database = join(directory, 'xss.db');
  const mneme = await createMneme({ path: database, logger: { warn: () => {}, info: () => {} } });
  admin = (await mneme.apiKeys.create({ label: 'admin' })).key;
  ann = (await mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key;
  await mneme.putChannel({ id: channel, visibility: 'private', members: ['ann'] });
  await mneme.createTopic({ id: 'trip', title: payload('title'), members: ['ann'] });
  await mneme.close();
  serve = await startServeProcess(database, children);
  // What ann plants with her own key.
  const planted = [
    // A display name may not hold a colon (ADR 40): the same markup without the javascript: link.
    await call('PUT', '/api/users/ann', { displayName: payload('name').replaceAll(':', '') }, ann),
    await call(
      'POST',
      '/api/memories',
      { content: payload('content'), category: '<b onmouseover=alert(1)>x</b>', scope: 'personal', userId: 'ann' },
      ann,
    ),
    await call(
      'POST',
      '/api/messages',
      { channelId: channel, sender: 'ann', role: 'user', topicId: 'trip', content: `I prefer ${payload('said')} tea` },
      ann,
    ),
    // What a chat bridge relays of her conversation, with the administrator's key.
    await call(
      'POST',
      '/api/exchanges',
      {
        channelId: channel,
        userId: 'ann',
        userMessage: `I live in Lisbon ${payload('exchange')}`,
        assistantReply: payload('reply'),
      },
      admin,
    ),
  ];
  expect(planted).toEqual([200, 201, 202, 202]);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
  page = await browser.newPage();
  page.setDefaultTimeout(30_000);
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await page.addInitScript(`sessionStorage.setItem('mneme.apiKey', ${JSON.stringify(admin)})`);
});

afterAll(async () => {
  await browser?.close();
  for (const child of children) child.kill();
  rmSync(directory, { recursive: true, force: true });
});

/** Opens a view as the administrator and says what of the planted markup became part of the page. */
async function open(path: string): Promise<{ title: string; elements: number; scriptLinks: number; text: string }> {
  await page.goto(`${serve.url}${path}`);
  await page.locator('#view[aria-busy="false"]').waitFor(wait);
  return page.evaluate<{ title: string; elements: number; scriptLinks: number; text: string }>(`({
    title: document.title,
    elements: document.querySelectorAll('main img, main script, main svg[onload], main [onerror], main [onmouseover], main b').length,
    scriptLinks: [...document.querySelectorAll('a')].filter((a) => /^\\s*javascript:/i.test(a.getAttribute('href') ?? '')).length,
    text: document.getElementById('view').textContent,
  })`);
}

describe('markup a user stored, as the inspector shows it to the administrator', () => {
  it('shows it as text in every view, with no element, handler or javascript link of its own', async () => {
    const memories = (await (
      await fetch(`${serve.url}/api/memories?limit=100`, { headers: { authorization: `Bearer ${admin}` } })
    ).json()) as { memories: Array<{ id: number }> };
    expect(memories.memories.length).toBeGreaterThan(1);
    const views = [
      '/memories',
      '/memories?userId=ann',
      ...memories.memories.map((memory) => `/memories/${memory.id}`),
      '/conversations',
      `/conversations?channel=${encodeURIComponent(channel)}`,
      `/search?q=tea&user=ann&channel=${encodeURIComponent(channel)}`,
      `/search?q=Lisbon&user=ann&channel=${encodeURIComponent(channel)}`,
      `/search?q=${encodeURIComponent(payload('query'))}&user=ann`,
      '/analytics',
      '/maintenance',
    ];
    const shown: string[] = [];
    for (const view of views) {
      const result = await open(view);
      expect({ view, ...result, text: undefined }).toEqual({
        view,
        title: expect.not.stringContaining('pwned'),
        elements: 0,
        scriptLinks: 0,
        text: undefined,
      });
      shown.push(result.text);
    }
    const all = shown.join('\n');
    for (const tag of ['content', 'said', 'exchange']) expect(all).toContain(`<script>document.title='pwned-${tag}'`);
    expect(all).toContain(channel);
    expect(dialogs).toEqual([]);
  });
});
