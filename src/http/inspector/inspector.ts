import { readFileSync } from 'node:fs';
import type { Hono } from 'hono';

/** The pages of the inspector: each is the same shell, the client module renders the view its path names. */
export const inspectorPages = [
  '/',
  '/search',
  '/analytics',
  '/memories',
  '/memories/:id{[0-9]+}',
  '/conversations',
  '/maintenance',
] as const;

/** The static files of the inspector, shipped in the package next to this module (`npm run build` copies them). */
const assetTypes: Record<string, string> = {
  'inspector.js': 'text/javascript; charset=utf-8',
  'inspector-views.js': 'text/javascript; charset=utf-8',
  'inspector-api.js': 'text/javascript; charset=utf-8',
  'inspector.css': 'text/css; charset=utf-8',
};

const shell = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mneme inspector</title>
<link rel="stylesheet" href="/inspector/inspector.css">
<script type="module" src="/inspector/inspector.js"></script>
</head>
<body>
<header>
<a class="brand" href="/">mneme</a>
<nav aria-label="Views">
<a href="/search">Search</a>
<a href="/analytics">Analytics</a>
<a href="/memories">Memories</a>
<a href="/conversations">Conversations</a>
<a href="/maintenance">Maintenance</a>
</nav>
<button type="button" id="forget-key" hidden>Forget key</button>
</header>
<main id="view" tabindex="-1"><p class="muted">Loading...</p></main>
<noscript>The inspector needs JavaScript; the JSON API is at /api and described at /openapi.json.</noscript>
</body>
</html>
`;

/**
 * Mounts the web inspector on the app: an HTML shell at each page's path and its client modules under
 * `/inspector/`. The pages read nothing but the JSON API of the same origin, with the key the user gives.
 */
export function mountInspector(app: Hono): void {
  const assets = new Map(
    Object.entries(assetTypes).map(([name, type]) => [
      name,
      { type, body: readFileSync(new URL(`./assets/${name}`, import.meta.url), 'utf8') },
    ]),
  );
  // Only this origin's scripts, styles and requests; no plugin, no <base>, forms sent only here; never in a frame of
  // another page (clickjacking; X-Frame-Options for browsers without frame-ancestors); no Referer (the query string is
  // the view's state: a search's words, a user's id). ADR 11, ADR 32.
  const headers = {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy':
      "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
  };
  for (const page of inspectorPages) app.get(page, () => new Response(shell, { headers }));
  app.get('/inspector/:name', (context) => {
    const asset = assets.get(context.req.param('name'));
    if (!asset) return context.notFound();
    return new Response(asset.body, {
      headers: { 'Content-Type': asset.type, 'Cache-Control': 'no-cache', 'X-Content-Type-Options': 'nosniff' },
    });
  });
}
