// fuzz: malformed input to the HTTP API and the CLI. The corpus is test/fuzz/http-corpus.json and
// test/fuzz/cli-corpus.json when they exist, else bench/fault-corpus/; HTTP bodies of valid requests
// are also mutated (seeded). Counts 5xx, crashes, stack traces, hangs and refused inputs that changed
// the database anyway.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repositoryRoot, runMneme, startServer } from './child-processes.mjs';
import { userDataFingerprint, withDatabase } from './database-checks.mjs';
import { send } from './http-client.mjs';
import { pick, seededRandom } from './seeded-text.mjs';

/** A line of a JavaScript stack trace: `    at name (file:line:column)`. */
const stackFrame = /^\s+at .*(:\d+:\d+\)?|\(native\)|<anonymous>\)?)$/m;

/** Stack traces in a text: runs of frame lines. */
export function stackTraces(text) {
  let traces = 0;
  let inTrace = false;
  for (const line of text.split('\n')) {
    const frame = stackFrame.test(line);
    if (frame && !inTrace) traces++;
    inTrace = frame;
  }
  return traces;
}

/**
 * Expands `{{repeat:<text>:<count>}}` in every string of a corpus value, as `test/fuzz/input-fuzz.test.ts` does (the
 * corpus's long names, paths and bodies: sent unexpanded until 2026-12-03, short, so the server rightly took them).
 */
function expand(value) {
  if (typeof value === 'string') {
    return value.replaceAll(/\{\{repeat:(.*?):(\d+)\}\}/gs, (_, text, count) => text.repeat(Number(count)));
  }
  if (Array.isArray(value)) return value.map(expand);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, expand(inner)]));
  }
  return value;
}

/** The list of cases of a corpus file, whatever its top-level shape (an array, or `cases`/`requests`/`inputs`). */
function caseList(document) {
  if (Array.isArray(document)) return document;
  return document.cases ?? document.requests ?? document.inputs ?? document.commands ?? [];
}

const asList = (value) => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** One HTTP case in the suite's shape, or null when the corpus entry has no path. */
function httpCase(listed, index) {
  const entry = listed.request && typeof listed.request === 'object' ? { ...listed, ...listed.request } : listed;
  const path = expand(entry.path ?? entry.url ?? entry.route);
  if (typeof path !== 'string') return null;
  // A string body is sent as is (its templates expanded), any other body as JSON.
  const raw = entry.rawBody ?? entry.raw ?? (typeof entry.body === 'string' ? entry.body : undefined);
  const json = entry.json ?? (entry.body !== undefined && raw === undefined ? entry.body : undefined);
  let body = raw === undefined ? undefined : expand(raw);
  if (entry.bodyBase64 !== undefined) body = Buffer.from(entry.bodyBase64, 'base64');
  // Bytes no JSON string can hold (invalid UTF-8), as the corpus gives them.
  if (entry.bodyHex !== undefined) body = Buffer.from(entry.bodyHex, 'hex');
  if (json !== undefined) body = JSON.stringify(expand(json));
  const headers = { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(entry.headers ?? {}) };
  for (const [name, value] of Object.entries(headers)) if (value === '') delete headers[name];
  return {
    name: entry.name ?? entry.description ?? `case ${index + 1}`,
    method: (entry.method ?? (body === undefined ? 'GET' : 'POST')).toUpperCase(),
    path: path.startsWith('/') ? path : `/${path}`,
    headers,
    body,
    expect: asList(entry.expect ?? entry.expectStatus ?? entry.expectedStatus ?? entry.status),
    quick: entry.quick === true,
  };
}

/** One CLI case in the suite's shape, or null when the corpus entry has no arguments. */
function cliCase(listed, index) {
  const entry = listed.command && typeof listed.command === 'object' ? { ...listed, ...listed.command } : listed;
  const args = expand(entry.args ?? entry.argv ?? entry.arguments);
  if (!Array.isArray(args)) return null;
  return {
    name: entry.name ?? entry.description ?? `case ${index + 1}`,
    args: args.map(String),
    files: expand(entry.files ?? {}),
    stdin: entry.stdin === undefined ? undefined : expand(entry.stdin),
    expect: asList(entry.expect ?? entry.expectExit ?? entry.exitCode ?? entry.exitCodes),
    timeoutMs: entry.timeoutMs ?? 20_000,
    mayWrite: entry.mayWrite === true,
    quick: entry.quick === true,
  };
}

/** Loads a corpus: the test corpus when it exists, else the suite's own. */
export function loadCorpus(kind) {
  const testCorpus = join(repositoryRoot, 'test', 'fuzz', `${kind}-corpus.json`);
  const ownCorpus = join(repositoryRoot, 'bench', 'fault-corpus', `${kind}-corpus.json`);
  const source = existsSync(testCorpus) ? testCorpus : ownCorpus;
  const entries = caseList(JSON.parse(readFileSync(source, 'utf8')));
  const shape = kind === 'http' ? httpCase : cliCase;
  const cases = entries.map((entry, index) => shape(entry, index));
  return {
    source: source.slice(repositoryRoot.length + 1),
    cases: cases.filter(Boolean),
    unreadable: cases.filter((entry) => !entry).length,
  };
}

/** In --quick: the cases marked quick, or (for a corpus without marks) every fifth one. */
function quickSubset(cases) {
  const marked = cases.filter((entry) => entry.quick);
  return marked.length > 0 ? marked : cases.filter((_, index) => index % 5 === 0);
}

/** Valid requests whose bodies are mutated, one field at a time. */
const validRequests = [
  {
    method: 'POST',
    path: '/api/memories',
    body: { content: 'Ana likes rooibos', scope: 'personal', userId: 'ana', category: 'preference', importance: 0.5 },
  },
  {
    method: 'POST',
    path: '/api/messages',
    body: {
      channelId: 'fuzz-room',
      sender: 'ana',
      content: 'I prefer rooibos in the evening',
      role: 'user',
      createdAt: '2024-01-01T10:00:00Z',
      topicId: 'fuzz-topic',
    },
  },
  {
    method: 'POST',
    path: '/api/exchanges',
    body: {
      channelId: 'fuzz-room',
      userId: 'ana',
      userMessage: 'My brother lives in Quito',
      assistantReply: 'Noted',
      createdAt: '2024-01-01T10:05:00Z',
    },
  },
  {
    method: 'POST',
    path: '/api/memories/search',
    body: {
      query: 'rooibos',
      viewer: { userId: 'ana', channelId: 'fuzz-room' },
      topK: 5,
      explain: true,
      mode: 'hybrid',
    },
  },
  { method: 'POST', path: '/api/context', body: { query: 'rooibos', viewer: { userId: 'ana' }, topK: 3 } },
  {
    method: 'PATCH',
    path: '/api/memories/1',
    body: { content: 'Ana likes rooibos a lot', importance: 0.7, pinned: true },
  },
  { method: 'PUT', path: '/api/users/ana', body: { displayName: 'Ana' } },
  { method: 'PUT', path: '/api/channels/fuzz-room', body: { visibility: 'private', members: ['ana', 'ben'] } },
  { method: 'POST', path: '/api/topics', body: { id: 'fuzz-topic-2', title: 'Fuzz' } },
  { method: 'POST', path: '/api/projects', body: { id: 'fuzz-project', managed: true } },
  { method: 'POST', path: '/api/maintenance/run', body: { tasks: ['decay'] } },
];

const strangeValues = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  1e20,
  -1e20,
  Number.MAX_SAFE_INTEGER + 2,
  '',
  ' ',
  '1e20',
  'NaN',
  '\u0000',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  "'; DROP TABLE memories; --",
  'x'.repeat(40_000),
  [],
  [null],
  {},
  { $gt: '' },
];

/** Seeded mutations of the valid requests: each field replaced by strange values, removed, or joined by an unknown one. */
function mutations(random, perField) {
  const cases = [];
  for (const request of validRequests) {
    for (const field of Object.keys(request.body)) {
      for (let index = 0; index < perField; index++) {
        const value = pick(random, strangeValues);
        cases.push({
          ...request,
          name: `${request.method} ${request.path}: ${field} = ${JSON.stringify(value)?.slice(0, 40)}`,
          body: { ...request.body, [field]: value },
        });
      }
      const { [field]: _removed, ...rest } = request.body;
      cases.push({ ...request, name: `${request.method} ${request.path}: without ${field}`, body: rest });
    }
    cases.push({
      ...request,
      name: `${request.method} ${request.path}: unknown field`,
      body: { ...request.body, unknownField: 1 },
    });
    const text = JSON.stringify(request.body);
    cases.push({
      ...request,
      name: `${request.method} ${request.path}: cut at a random byte`,
      raw: text.slice(0, Math.floor(random() * text.length)),
    });
  }
  return cases.map((entry) => ({
    name: entry.name,
    method: entry.method,
    path: entry.path,
    headers: { 'content-type': 'application/json' },
    body: entry.raw ?? JSON.stringify(entry.body),
    expect: [],
    generated: true,
  }));
}

const sameFingerprint = (left, right) => JSON.stringify(left) === JSON.stringify(right);

export async function fuzzHttp({ folder, seed, quick, log }) {
  const database = join(folder, 'fuzz-http.db');
  const corpus = loadCorpus('http');
  const random = seededRandom(seed + 17);
  const corpusCases = quick ? quickSubset(corpus.cases) : corpus.cases;
  const generated = mutations(random, quick ? 0 : 4);
  const cases = [...corpusCases, ...(quick ? generated.filter((_, index) => index % 12 === 0) : generated)];
  let server = await startServer(database);
  const seedData = [
    {
      method: 'POST',
      path: '/api/memories',
      json: { content: 'Ana drinks rooibos', scope: 'personal', userId: 'ana' },
    },
    {
      method: 'POST',
      path: '/api/messages',
      json: { channelId: 'fuzz-room', sender: 'ana', content: 'I prefer rooibos tea at night' },
    },
    { method: 'POST', path: '/api/topics', json: { id: 'fuzz-topic' } },
  ];
  for (const request of seedData) await send(server.url, request);
  const found = { serverErrors: [], crashes: [], stackTraces: [], hangs: [], changed: [], unexpected: [] };
  for (const entry of cases) {
    const before = withDatabase(database, userDataFingerprint);
    const response = await send(server.url, {
      method: entry.method,
      path: entry.path,
      headers: entry.headers,
      body: entry.body,
      timeoutMs: 5000,
    });
    const label = `${entry.name} (${entry.method} ${entry.path.slice(0, 60)})`;
    if (response.failure === 'timeout') found.hangs.push(label);
    if (response.status >= 500) found.serverErrors.push(`${label}: ${response.status} ${response.text.slice(0, 160)}`);
    if (response.text && stackTraces(response.text) > 0) found.stackTraces.push(`${label}: in the body`);
    if (response.status && entry.expect.length > 0 && !entry.expect.includes(response.status)) {
      found.unexpected.push(`${label}: ${response.status}, expected ${entry.expect.join(' or ')}`);
    }
    const refused = response.failure !== undefined || response.status >= 400;
    if (refused && server.child.exitCode === null) {
      const after = withDatabase(database, userDataFingerprint);
      if (!sameFingerprint(before, after)) found.changed.push(label);
    }
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      found.crashes.push(`${label}: the server exited (${server.child.signalCode ?? server.child.exitCode})`);
      server = await startServer(database);
    }
  }
  await server.stop();
  const logTraces = stackTraces(server.output.stderr);
  log(`fuzz: ${cases.length} HTTP requests (${corpus.source}), ${found.serverErrors.length} answered 5xx`);
  return {
    corpus: corpus.source,
    unreadableCases: corpus.unreadable,
    requests: cases.length,
    corpusRequests: corpusCases.length,
    serverErrors: found.serverErrors,
    crashes: found.crashes,
    stackTracesInBodies: found.stackTraces,
    stackTracesInServerLog: logTraces,
    hangs: found.hangs,
    changedAlthoughRefused: found.changed,
    unexpectedStatus: found.unexpected,
  };
}

/** Exit codes of the CLI that mean a failure of mneme itself rather than of the input: 1 (unexpected error). */
const internalExit = (code, expect) => code === 1 || (code === 7 && !expect.includes(7));

export async function fuzzCli({ folder, quick, log }) {
  const corpus = loadCorpus('cli');
  const cases = quick ? quickSubset(corpus.cases) : corpus.cases;
  const database = join(folder, 'fuzz-cli.db');
  const prepared = await runMneme([
    '--db',
    database,
    '--create',
    'add',
    'Ana drinks rooibos',
    '--scope',
    'personal',
    '--user',
    'ana',
  ]);
  if (prepared.code !== 0) throw new Error(`fuzz: could not prepare the CLI database: ${prepared.stderr}`);
  const found = { internalErrors: [], crashes: [], stackTraces: [], hangs: [], changed: [], unexpected: [] };
  for (const [index, entry] of cases.entries()) {
    const caseFolder = join(folder, `cli-case-${index}`);
    mkdirSync(caseFolder, { recursive: true });
    for (const [name, file] of Object.entries(entry.files)) {
      const path = join(caseFolder, name);
      if (file.directory) mkdirSync(path, { recursive: true });
      else writeFileSync(path, file.base64 === undefined ? (file.text ?? '') : Buffer.from(file.base64, 'base64'));
    }
    const args = entry.args.map((argument) =>
      argument.replaceAll(/\{file:([^}]+)\}/g, (_, name) => join(caseFolder, name)),
    );
    const fullArguments = args.includes('--db') ? args : ['--db', database, ...args];
    const before = withDatabase(database, userDataFingerprint);
    const run = await runMneme(fullArguments, {
      timeoutMs: entry.timeoutMs,
      cwd: caseFolder,
      ...(entry.stdin === undefined ? {} : { stdin: entry.stdin }),
    });
    const label = `${entry.name} (mneme ${args.join(' ').slice(0, 80)})`;
    const shown = `${label}: exit ${run.signal ?? run.code}, ${run.stderr.trim().split('\n')[0]?.slice(0, 160)}`;
    if (run.timedOut) found.hangs.push(label);
    else if (run.signal !== null || run.code > 9) found.crashes.push(shown);
    else if (internalExit(run.code, entry.expect)) found.internalErrors.push(shown);
    if (stackTraces(run.stderr) + stackTraces(run.stdout) > 0) found.stackTraces.push(shown);
    if (!run.timedOut && entry.expect.length > 0 && !entry.expect.includes(run.code))
      found.unexpected.push(`${shown}; expected ${entry.expect.join(' or ')}`);
    if (run.code !== 0 && !entry.mayWrite && !sameFingerprint(before, withDatabase(database, userDataFingerprint)))
      found.changed.push(label);
  }
  log(`fuzz: ${cases.length} CLI runs (${corpus.source}), ${found.internalErrors.length} unexpected errors`);
  return {
    corpus: corpus.source,
    unreadableCases: corpus.unreadable,
    runs: cases.length,
    internalErrors: found.internalErrors,
    crashes: found.crashes,
    stackTraces: found.stackTraces,
    hangs: found.hangs,
    changedAlthoughRefused: found.changed,
    unexpectedExit: found.unexpected,
  };
}
