import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { HISTORY_PAGE } from '../src/core/schemas.js';
import { type ServeProcess, startServeProcess } from './serve-process.js';

/**
 * Attack finding (wt-d, attack 26d): the HTTP API answers a memory's history a page at a time, oldest first (ADR 33),
 * and the inspector asked for the first page only. A memory edited more than 100 times showed its first 100 versions
 * and, under them, the text of an API request a browser cannot send with the page's key: its latest edits, the ones an
 * operator opens the page for, were out of the inspector's reach. A full page now links the next one.
 */
const EDITS = HISTORY_PAGE + 20;
const children: ChildProcess[] = [];
/** The served database with its edited memory, and the browser on it. */
let world: { directory: string; memoryId: number; serve: ServeProcess; browser: Browser; page: Page } | undefined;

beforeAll(async () => {
  const directory = mkdtempSync(join(tmpdir(), 'mneme-attack26d-inspector-'));
  const database = join(directory, 'inspector.db');
  const mneme = await createMneme({ path: database, logger: { warn: () => {}, info: () => {} } });
  const memoryId = (await mneme.remember({ content: 'Oz keeps bees on the roof', scope: 'personal', userId: 'oz' })).id;
  for (let edit = 1; edit <= EDITS; edit += 1) {
    await mneme.update({ id: memoryId, content: `Oz keeps ${edit} hives of bees on the roof` });
  }
  await mneme.close();
  const serve = await startServeProcess(database, children);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox'],
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(30_000);
  world = { directory, memoryId, serve, browser, page };
}, 120_000);

afterAll(async () => {
  await world?.browser.close();
  for (const child of children) child.kill();
  if (world) rmSync(world.directory, { recursive: true, force: true });
});

describe('the inspector page of a memory edited more than a page of versions', () => {
  it('links the later versions under a full page, so the latest edit is shown', async () => {
    if (!world) throw new Error('the served database did not start');
    const { page, serve, memoryId } = world;
    const wait = { timeout: 30_000 };
    await page.goto(`${serve.url}/memories/${memoryId}?userId=oz`);
    await page.getByTestId('version').first().waitFor(wait);
    expect(await page.getByTestId('version').count()).toBe(HISTORY_PAGE);
    await page.getByTestId('history-more').click();
    await page.getByText(`v${EDITS + 1} update`).waitFor(wait);
    expect(new URL(page.url()).searchParams.get('historyAfter')).toBe(String(HISTORY_PAGE));
    expect(new URL(page.url()).searchParams.get('userId')).toBe('oz');
    const versions = await page.getByTestId('version').locator('strong').allTextContents();
    expect(versions).toEqual(
      Array.from({ length: EDITS + 1 - HISTORY_PAGE }, (_, index) => `v${HISTORY_PAGE + index + 1} update`),
    );
    expect(await page.getByTestId('history-more').count()).toBe(0);
  }, 90_000);
});
