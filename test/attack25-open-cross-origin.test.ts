import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

/*
 * A service that runs open (no key was ever created: the README's "Try it", or `--open`) on loopback, and a web page
 * of another origin the administrator visits in the same browser: another port of localhost (a dev server, a local
 * tool) or any site. The page cannot read the service's answers, but its browser sends, without asking first, a form
 * POST or a `no-cors` fetch without a body, and an open service has no key to refuse it with.
 */

let mneme: Mneme;
let server: RunningHttpServer;
let attacker: Server;
let attackerUrl = '';
let browser: Browser;

/** The attacker's page: sends each request `no-cors` (what a browser sends without a preflight), then a form POST. */
function attackerPage(target: string, memoryId: number): string {
  return `<!doctype html><html><body>
<form id="f" method="POST" action="${target}/api/memories/${memoryId}/restore"></form>
<script>
(async () => {
  const sent = [];
  for (const path of ['/api/memories/${memoryId}/restore', '/api/maintenance/run', '/api/memories/extract/t1']) {
    try {
      await fetch('${target}' + path, { method: 'POST', mode: 'no-cors' });
      sent.push(path);
    } catch (error) {
      sent.push(path + ' failed: ' + error.message);
    }
  }
  document.title = 'sent ' + sent.join(', ');
})();
</script></body></html>`;
}

let page = '';

beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:' });
  server = await startHttpServer({ mneme, port: 0, logError: () => {} });
  attacker = createServer((_incoming, outgoing) => {
    outgoing.setHeader('content-type', 'text/html; charset=utf-8');
    outgoing.end(page);
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  // Another origin on the same machine: localhost (not 127.0.0.1) and another port.
  attackerUrl = `http://localhost:${(attacker.address() as AddressInfo).port}/`;
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => attacker?.close(resolve));
  await server?.close();
  await mneme?.close();
});

/** A request with the headers a browser adds, sent from Node so each can be set. */
function send(path: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: '127.0.0.1', port: Number(port), path, method: 'POST', headers }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString();
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

describe('an open service and a web page of another origin in the browser of the administrator', () => {
  it('does not restore a forgotten memory for a no-cors fetch or a form the page sends', async () => {
    const memory = await mneme.remember({
      content: 'Oz wrote his bank PIN on a note',
      scope: 'personal',
      userId: 'oz',
    });
    await mneme.forget(memory.id);
    page = attackerPage(server.url, memory.id);
    const tab = await browser.newPage();
    await tab.goto(attackerUrl);
    await tab.waitForFunction("document.title.startsWith('sent')", null, { timeout: 20_000 });
    expect(await tab.title()).not.toContain('failed');
    await Promise.all([tab.waitForURL(`${server.url}/**`), tab.evaluate('document.forms[0].submit()')]);
    await tab.close();

    expect((await mneme.get({ id: memory.id }))?.archivedAt).not.toBeNull();
  });

  it('still lets the inspector of its own origin forget and restore in the browser', async () => {
    const memory = await mneme.remember({ content: 'Oz parks on level 3', scope: 'personal', userId: 'oz' });
    const tab = await browser.newPage();
    await tab.goto(`${server.url}/memories/${memory.id}`);
    const statuses = await tab.evaluate(async (id) => {
      const forget = await fetch(`/api/memories/${id}`, { method: 'DELETE' });
      const restore = await fetch(`/api/memories/${id}/restore`, { method: 'POST' });
      return [forget.status, restore.status];
    }, memory.id);
    await tab.close();

    expect(statuses).toEqual([200, 200]);
    expect((await mneme.get({ id: memory.id }))?.archivedAt).toBeNull();
  });

  it('refuses a request whose Origin or Sec-Fetch-Site names another origin, and answers one without them', async () => {
    const memory = await mneme.remember({
      content: 'Oz hides the spare key in the shed',
      scope: 'personal',
      userId: 'oz',
    });
    await mneme.forget(memory.id);
    const path = `/api/memories/${memory.id}/restore`;
    const { port } = new URL(server.url);

    const otherPort = await send(path, { origin: 'http://127.0.0.1:1' });
    const sandboxed = await send(path, { origin: 'null' });
    const sameSite = await send(path, { 'sec-fetch-site': 'same-site', origin: `http://localhost:${port}` });
    const crossSite = await send(path, { 'sec-fetch-site': 'cross-site' });
    expect([otherPort.status, sandboxed.status, sameSite.status, crossSite.status]).toEqual([403, 403, 403, 403]);
    expect(otherPort.text).toContain('another origin');
    expect((await mneme.get({ id: memory.id }))?.archivedAt).not.toBeNull();

    const ownOrigin = await send(path, { origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'same-origin' });
    expect(ownOrigin.status).toBe(200);
    await mneme.forget(memory.id);
    const curl = await send(path, {});
    expect(curl.status).toBe(200);
  });
});
