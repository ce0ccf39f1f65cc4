import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Memory, MemoryPage, MemoryStats, MemoryVersion } from '../src/core/types.js';
import { createFixedClock } from '../src/testing.js';
import { type ServeProcess, startServeProcess } from './serve-process.js';

/*
 * The inspector in a real browser (Debian's chromium, driven by playwright-core) against the built
 * `mneme serve` on a seeded database. Each page's screenshot is taken; with MNEME_SCREENSHOTS=1 they go to
 * docs/inspector/ (the README shows them), otherwise to a temporary folder, so a test run leaves the
 * repository as it was (served times follow the real clock: the images differ from run to run).
 */

const screenshots =
  process.env.MNEME_SCREENSHOTS === '1'
    ? resolve(import.meta.dirname, '../docs/inspector')
    : mkdtempSync(join(tmpdir(), 'mneme-inspector-shots-'));
const DAY = 24 * 60 * 60 * 1000;
const wait = { timeout: 30_000 };
const children: ChildProcess[] = [];
let directory = '';
let database = '';
let serve: ServeProcess;
let browser: Browser;
let page: Page;
const ids = { tea: 0, ann: 0, lisbon: 0 };

/** A deterministic store: oz and ann in a shared kitchen channel, oz's own channel, manual memories over a week. */
async function seed(path: string): Promise<void> {
  const today = Math.floor(Date.now() / DAY) * DAY;
  const clock = createFixedClock(today - 6 * DAY + 9 * 60 * 60 * 1000);
  const mneme = await createMneme({ path, clock, logger: { warn: () => {}, info: () => {} } });
  await mneme.putChannel({ id: 'kitchen', visibility: 'private', members: ['oz', 'ann'] });
  await mneme.putChannel({ id: 'oz-dm', visibility: 'direct', members: ['oz'] });
  await mneme.setDisplayName({ userId: 'oz', displayName: 'Oz' });
  await mneme.setDisplayName({ userId: 'ann', displayName: 'Ann' });
  const said: Array<[string, string, string]> = [
    ['oz-dm', 'oz', 'I live in Lisbon and I work as a ferry engineer'],
    ['kitchen', 'ann', 'I prefer rooibos tea over coffee'],
    ['oz-dm', 'oz', 'I prefer green tea over coffee in the morning'],
    ['kitchen', 'oz', 'My sister Mira lives in Porto'],
  ];
  for (const [channelId, sender, content] of said) {
    await mneme.ingestExchange({
      channelId,
      userId: sender,
      userMessage: content,
      assistantReply: 'Noted.',
    });
    await mneme.whenIdle();
    clock.advance(DAY);
  }
  const manual: Array<[string, string, number]> = [
    ['Oz keeps the spare ferry keys in the blue tin', 'fact', 0.8],
    ['Oz is allergic to peanuts', 'fact', 0.95],
    ['Oz likes jasmine tea after dinner', 'preference', 0.6],
    ['Oz is planning a trip to Madeira in May', 'event', 0.5],
  ];
  for (const [content, category, importance] of manual) {
    await mneme.remember({ content, category, importance, scope: 'personal', userId: 'oz' });
    clock.advance(DAY / 3);
  }
  ids.ann = (await mneme.remember({ content: 'Ann keeps bees on the roof', scope: 'personal', userId: 'ann' })).id;
  await mneme.remember({ content: 'The office closes at 18:00 on Fridays', scope: 'global', pinned: true });
  for (const query of ['tea', 'tea coffee', 'ferry keys', 'Lisbon']) {
    await mneme.recall({ query, viewer: { userId: 'oz', channelId: 'oz-dm' } });
  }
  const oz = await mneme.list({ userId: 'oz', limit: 100 });
  ids.tea = oz.memories.find((memory) => memory.content.includes('jasmine'))?.id ?? 0;
  ids.lisbon = oz.memories.find((memory) => memory.scope === 'personal' && memory.content.includes('Lisbon'))?.id ?? 0;
  await mneme.close();
}

/** A JSON answer of the served API, read as `T`. */
async function json<T>(path: string): Promise<T> {
  return (await (await fetch(`${serve.url}${path}`)).json()) as T;
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: false });
}

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'mneme-inspector-'));
  database = join(directory, 'inspector.db');
  mkdirSync(screenshots, { recursive: true });
  await seed(database);
  if (!ids.tea || !ids.lisbon || !ids.ann) throw new Error(`seeding found no memory: ${JSON.stringify(ids)}`);
  serve = await startServeProcess(database, children);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1180, height: 860 } });
  page.setDefaultTimeout(30_000);
});

afterAll(async () => {
  await browser?.close();
  for (const child of children) child.kill();
  rmSync(directory, { recursive: true, force: true });
  if (process.env.MNEME_SCREENSHOTS !== '1') rmSync(screenshots, { recursive: true, force: true });
});

describe('the inspector in a browser', () => {
  it('leads from / to every view, and back and forward work', async () => {
    await page.goto(`${serve.url}/`);
    await page.getByRole('heading', { name: 'mneme inspector' }).waitFor(wait);
    await shot('home');
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Analytics' }).click();
    await page.getByTestId('stat-total').waitFor(wait);
    expect(new URL(page.url()).pathname).toBe('/analytics');
    await page.goBack();
    await page.getByRole('heading', { name: 'mneme inspector' }).waitFor(wait);
    await page.goForward();
    await page.getByTestId('stat-total').waitFor(wait);
  });

  it('shows a shared debug search link with each hit’s breakdown and badge, and leaves access counts unchanged', async () => {
    const before = await json<MemoryPage>(`/api/memories?userId=oz&limit=100`);
    await page.goto(`${serve.url}/search?q=tea&user=oz&channel=oz-dm`);
    await page.getByTestId('hit').first().waitFor(wait);
    const hits = page.getByTestId('hit');
    expect(await hits.count()).toBeGreaterThan(1);
    const first = hits.first();
    expect(await first.getByTestId('breakdown').locator('dt').allTextContents()).toEqual(
      expect.arrayContaining(['relevance', 'importance', 'recency', 'accessFrequency', 'scope', 'pinned']),
    );
    expect(['fts', 'vector', 'hybrid', 'graph', 'recent']).toContain(await first.getByTestId('badge').textContent());
    expect(await first.getByTestId('score').textContent()).toMatch(/^score 0\.\d+|^score 1$/);
    await page.getByTestId('context-block').waitFor(wait);
    expect(await page.getByTestId('words').textContent()).toMatch(/^\d+ words$/);
    expect(await page.getByLabel('Query').inputValue()).toBe('tea');
    await shot('search');
    const shown = await hits.evaluateAll((items) => items.map((item) => Number(item.getAttribute('data-memory-id'))));
    const after = await json<MemoryPage>(`/api/memories?userId=oz&limit=100`);
    const count = (listed: MemoryPage, id: number) =>
      listed.memories.find((memory) => memory.id === id)?.accessCount ?? -1;
    for (const id of shown) expect(count(after, id)).toBe(count(before, id));
    expect(shown.some((id) => count(before, id) > 0)).toBe(true);
  });

  it('searches from the form with the keyboard only, and puts the state in the URL', async () => {
    await page.goto(`${serve.url}/search`);
    await page.getByLabel('Query').focus();
    await page.keyboard.type('ferry keys');
    await page.keyboard.press('Tab');
    await page.keyboard.type('oz');
    await page.keyboard.press('Enter');
    await page.getByTestId('hit').first().waitFor(wait);
    const url = new URL(page.url());
    expect(url.searchParams.get('q')).toBe('ferry keys');
    expect(url.searchParams.get('user')).toBe('oz');
  });

  it('shows the analytics figures equal to /api/stats, with the charts', async () => {
    const stats = await json<MemoryStats>('/api/stats');
    await page.goto(`${serve.url}/analytics`);
    await page.getByTestId('stat-total').waitFor(wait);
    expect(await page.getByTestId('stat-total').textContent()).toBe(String(stats.total));
    expect(await page.getByTestId('stat-pinned').textContent()).toBe(String(stats.pinned));
    expect(await page.getByTestId('stat-added').textContent()).toBe(String(stats.addedLast7Days));
    expect(await page.getByTestId('stat-expiring').textContent()).toBe(String(stats.expiring));
    const mostAccessed = await page.getByTestId('most-accessed').locator('li').allTextContents();
    expect(mostAccessed).toHaveLength(stats.mostAccessed.length);
    expect(mostAccessed[0]).toContain(stats.mostAccessed[0]?.content);
    expect(await page.getByTestId('chart-per-day').locator('tr').count()).toBe(30);
    await shot('analytics');
  });

  it('lists memories with filters and pages, back and forward included', async () => {
    await page.goto(`${serve.url}/memories?userId=oz&limit=3`);
    await page.getByTestId('memory-table').waitFor(wait);
    expect(await page.getByTestId('memory-table').locator('tbody tr').count()).toBe(3);
    await shot('memories');
    await page.getByRole('link', { name: 'Next →' }).click();
    await page.waitForURL(/offset=3/, wait);
    await page.getByText(/4–/).waitFor(wait);
    await page.goBack();
    await page.waitForURL((url) => !url.search.includes('offset'), wait);
    await page.getByText(/ 1–3 shown/).waitFor(wait);
  });

  it('edits a memory, which adds a version the history shows; forget and restore round-trip', async () => {
    await page.goto(`${serve.url}/memories/${ids.tea}`);
    await page.getByTestId('memory-content').waitFor(wait);
    const versions = await page.getByTestId('version').count();
    await page.getByLabel('Content').fill('Oz likes jasmine tea after dinner, never before noon');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByTestId('version').nth(versions).waitFor(wait);
    expect(await page.getByTestId('version').count()).toBe(versions + 1);
    expect(await page.getByTestId('history').locator('ins').last().textContent()).toBe(
      'Oz likes jasmine tea after dinner, never before noon',
    );
    expect((await json<MemoryVersion[]>(`/api/memories/${ids.tea}/history`)).length).toBe(versions + 1);

    await page.getByRole('button', { name: 'Forget' }).click();
    await page.getByRole('button', { name: 'Restore' }).waitFor(wait);
    expect((await json<Memory>(`/api/memories/${ids.tea}`)).archivedAt).not.toBeNull();
    await page.getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('button', { name: 'Forget' }).waitFor(wait);
    expect((await json<Memory>(`/api/memories/${ids.tea}`)).archivedAt).toBeNull();
    expect(await page.getByTestId('version').count()).toBe(versions + 3);
  });

  it("shows a memory's fields, the messages it came from, and its page", async () => {
    await page.goto(`${serve.url}/memories/${ids.lisbon}`);
    await page.getByTestId('sources').waitFor(wait);
    expect(await page.getByTestId('sources').textContent()).toContain('I live in Lisbon');
    await shot('memory');
  });

  it('shows the conversations with what was extracted from each message', async () => {
    await page.goto(`${serve.url}/conversations?channel=oz-dm`);
    await page.getByTestId('message').first().waitFor(wait);
    expect(await page.getByTestId('messages').textContent()).toContain('I live in Lisbon');
    expect(await page.getByRole('list', { name: 'Extracted memories' }).count()).toBeGreaterThan(0);
    await shot('conversations');
  });

  it('shows maintenance state and runs a task now', async () => {
    await page.goto(`${serve.url}/maintenance`);
    await page.getByTestId('tasks').waitFor(wait);
    await page.getByRole('button', { name: 'Run decay now' }).click();
    await page.getByTestId('run-report').waitFor(wait);
    expect(JSON.parse((await page.getByTestId('run-report').textContent()) ?? '{}').decay).toBeDefined();
    expect(await page.getByTestId('tasks').textContent()).toContain('"checked"');
    await shot('maintenance');
  });

  it('shows a failed request with its problem title and detail, never a blank page', async () => {
    await page.goto(`${serve.url}/memories/999999`);
    await page.getByTestId('error').waitFor(wait);
    expect(await page.getByTestId('error').locator('.error-title').textContent()).toBe('Not Found');
    expect(await page.getByTestId('error').locator('.error-detail').textContent()).toBe('memory 999999 does not exist');
    await page.goto(`${serve.url}/search?q=tea&topK=500`);
    await page.getByTestId('error').waitFor(wait);
    expect(await page.getByTestId('error').locator('.error-title').textContent()).toBe('Unprocessable Content');
    expect(await page.getByTestId('error').locator('.error-detail').textContent()).toContain(
      'topK must be at most 100',
    );
    await shot('error');
  });

  it('stays readable at a phone width', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${serve.url}/search?q=tea&user=oz`);
    await page.getByTestId('hit').first().waitFor(wait);
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await shot('search-phone');
    await page.setViewportSize({ width: 1180, height: 860 });
  });

  it('with keys, asks for one, keeps it for the tab, and a user key cannot open another user’s memory by its URL', async () => {
    const keys = await createMneme({ path: database, logger: { warn: () => {}, info: () => {} } });
    const oz = await keys.apiKeys.create({ label: 'oz-inspector', userId: 'oz' });
    await keys.close();
    await page.goto(`${serve.url}/memories/${ids.lisbon}`);
    await page.getByRole('textbox', { name: 'API key' }).waitFor(wait);
    expect(await page.getByTestId('error').locator('.error-title').textContent()).toBe('Unauthorized');
    await shot('key');
    await page.getByRole('textbox', { name: 'API key' }).fill(oz.key);
    await page.keyboard.press('Enter');
    await page.getByTestId('memory-content').waitFor(wait);
    expect(await page.evaluate<string | null>("sessionStorage.getItem('mneme.apiKey')")).toBe(oz.key);
    await page.goto(`${serve.url}/memories/${ids.ann}`);
    await page.getByTestId('error').waitFor(wait);
    expect(await page.getByTestId('error').locator('.error-title').textContent()).toBe('Not Found');
    expect(await page.locator('main').textContent()).not.toContain('bees');
    await page.goto(`${serve.url}/analytics`);
    await page.getByTestId('error').waitFor(wait);
    expect(await page.getByTestId('error').locator('.error-title').textContent()).toBe('Forbidden');
  });
});
