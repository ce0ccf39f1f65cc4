import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '..');

interface LockEntry {
  version?: string;
  resolved?: string;
  dev?: boolean;
  link?: boolean;
  [field: string]: unknown;
}

/**
 * The lockfile of a project that depends on the packed tarball: mneme's own production dependencies,
 * exactly as its package-lock.json pins them (with their integrity), and a registry address for each.
 *
 * Why not `npm install --offline <tarball>`: npm then resolves each dependency's version range, which
 * needs the registry's package documents, and `npm ci` (what filled the cache) stores only tarballs, so
 * it fails with ENOTCACHED. `npm ci --offline` with this lockfile reads nothing but those cached
 * tarballs, found by integrity.
 */
function consumerLockfile(tarball: string): object {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockEntry>;
  };
  const self = lock.packages[''] ?? {};
  const packages: Record<string, LockEntry> = {
    '': { name: 'consumer', version: '1.0.0', dependencies: { mneme: `file:${tarball}` } },
    'node_modules/mneme': {
      version: String(self.version),
      resolved: `file:${tarball}`,
      dependencies: self.dependencies,
      bin: self.bin,
      engines: self.engines,
    },
  };
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '' || entry.dev || entry.link) continue;
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const file = `${name.split('/').pop()}-${entry.version}.tgz`;
    packages[path] = { ...entry, resolved: entry.resolved ?? `https://registry.npmjs.org/${name}/-/${file}` };
  }
  return { name: 'consumer', version: '1.0.0', lockfileVersion: 3, requires: true, packages };
}

/**
 * npm's environment for the install: better-sqlite3 compiled from source (its prebuilt-binary download
 * is never tried), against the headers installed beside this Node when they are there (so node-gyp
 * downloads none).
 */
function installEnvironment(): NodeJS.ProcessEnv {
  const nodeDirectory = resolve(dirname(process.execPath), '..');
  return {
    ...process.env,
    npm_config_build_from_source: 'true',
    ...(existsSync(join(nodeDirectory, 'include', 'node', 'node_api.h')) ? { npm_config_nodedir: nodeDirectory } : {}),
  };
}

/** What the consumer runs: plain Node, importing the installed package by name. */
const consumerScript = `
import { createMneme } from 'mneme';
import { createFakeEmbeddingModel, createFixedClock } from 'mneme/testing';
import { mnemeMiddleware } from 'mneme/ai-sdk';

const mneme = await createMneme({
  path: 'memory.db',
  embedder: createFakeEmbeddingModel(),
  clock: createFixedClock('2026-01-15T09:00:00.000Z'),
});
const stored = await mneme.remember({ content: 'The staging server is called kestrel' });
const { hits } = await mneme.recall({ query: 'what is the staging server called' });

// mneme/ai-sdk without the ai package installed: the middleware's calls, as wrapLanguageModel makes them.
const middleware = mnemeMiddleware({ mneme, viewer: { userId: 'ann', channelId: 'dm-ann' } });
const question = { role: 'user', content: [{ type: 'text', text: 'What is the staging server called?' }] };
const params = await middleware.transformParams({ type: 'generate', params: { prompt: [question] } });
const reply = { type: 'text', text: 'It is called kestrel.' };
const finishReason = { unified: 'stop', raw: 'stop' };
await middleware.wrapGenerate({
  params,
  doGenerate: async () => ({ content: [reply], finishReason, usage: {}, warnings: [] }),
});
await middleware.settled();
const turns = await mneme.turns({ channelId: 'dm-ann' });
await mneme.close();
console.log(
  JSON.stringify({
    stored: stored.id,
    recalled: hits.map((hit) => hit.memory.content),
    prompt: params.prompt.map((message) => message.role),
    block: params.prompt[0].content.includes('kestrel'),
    turns: turns.map((message) => message.content),
  }),
);
`;

describe('the packed package', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-package-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('installs from its tarball into a new project without the network, and mneme, mneme/testing and mneme/ai-sdk (without ai installed) work there', async () => {
    expect(existsSync(join(root, 'dist', 'index.js')), 'dist/ is built (npm test builds it first)').toBe(true);
    // --ignore-scripts: pack the dist/ that is built; `prepare` would rebuild it while other tests read it.
    await run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', folder], { cwd: root });
    const [tarball] = readdirSync(folder).filter((name) => name.endsWith('.tgz'));
    expect(tarball).toBe('mneme-0.1.0.tgz');

    const project = join(folder, 'consumer');
    mkdirSync(project);
    const manifest = { name: 'consumer', version: '1.0.0', private: true, type: 'module' };
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ ...manifest, dependencies: { mneme: `file:../${tarball}` } }),
    );
    writeFileSync(join(project, 'package-lock.json'), JSON.stringify(consumerLockfile(`../${tarball}`)));
    writeFileSync(join(project, 'consumer.mjs'), consumerScript);
    await run('npm', ['ci', '--offline', '--no-audit', '--no-fund'], { cwd: project, env: installEnvironment() });
    expect(existsSync(join(project, 'node_modules', 'mneme', 'LICENSE'))).toBe(true);

    const { stdout } = await run(process.execPath, ['consumer.mjs'], { cwd: project });
    expect(JSON.parse(stdout)).toEqual({
      stored: 1,
      recalled: ['The staging server is called kestrel'],
      prompt: ['system', 'user'],
      block: true,
      turns: ['What is the staging server called?', 'It is called kestrel.'],
    });
    expect(existsSync(join(project, 'node_modules', 'ai')), 'the consumer has no ai package').toBe(false);

    const help = await run(join(project, 'node_modules', '.bin', 'mneme'), ['--help'], { cwd: project });
    expect(help.stdout).toMatch(/\bserve\b/);
    // Compiling better-sqlite3 takes a minute alone and several beside the other tests: a generous guard.
  }, 1_200_000);
});
