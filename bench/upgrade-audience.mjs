// What the upgrade's audience check costs (ADR 5, 2026-12-03, session 18): a database at the schema before SQLite's
// migration 26 (PostgreSQL's 6), written as a mneme before 2026-12-03 left it (messages in public channels with the
// offline extractor's memories, global facts among them, then a channel in four made private by writing the
// channel, nothing moved), opened by `createMneme`, which migrates (one audience mark per channel memories cite)
// and checks the marks before it returns. Prints the memories, the marks, what moved, and the open's milliseconds
// (the same open of the database with no marks left, for comparison).
//
//   npm run build && node bench/upgrade-audience.mjs [--messages 4000] [--channels 200] [--store sqlite|pglite] [--private 4]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '4000' },
    channels: { type: 'string', default: '200' },
    store: { type: 'string', default: 'sqlite' },
    private: { type: 'string', default: '4' },
  },
});
const messages = Number(values.messages);
const channels = Number(values.channels);
const store = values.store;
/** One channel in this many is made private (0: none, the check moves nothing). */
const privateEvery = Number(values.private);
const root = dirname(dirname(fileURLToPath(import.meta.url)));
const load = (path) => import(join(root, 'dist', path));
const { createMneme } = await load('index.js');
const { createEngine } = await load('core/create-engine.js');
const { resolvePolicy } = await load('core/policy.js');
const { createOfflineExtractor } = await load('models/offline/offline-extractor.js');
const { createOfflineEpisodeSummariser } = await load('models/offline/offline-episode-summariser.js');
const { createOfflineMemoryMerger } = await load('models/offline/offline-memory-merger.js');
const { createSqliteStorage } = await load('storage/sqlite/sqlite-storage.js');
const { createPgliteDatabase } = await load('storage/postgres/postgres-pglite-database.js');
const { createPostgresStorage } = await load('storage/postgres/postgres-storage.js');

const folder = mkdtempSync(join(tmpdir(), 'mneme-upgrade-audience-'));
const path = store === 'sqlite' ? join(folder, 'old.db') : `pglite:${join(folder, 'old')}`;
const quiet = { warn() {}, info() {} };
const words = ['zanzibar', 'quokka', 'marmot', 'kestrel', 'lynx', 'otter', 'puffin', 'tapir', 'wombat', 'yak'];
const things = ['hotel', 'editor', 'airline', 'coffee', 'keyboard', 'desk', 'train', 'laptop'];

try {
  const storage =
    store === 'sqlite'
      ? createSqliteStorage({ path, migrateTo: 25 })
      : await createPostgresStorage({ database: await createPgliteDatabase(path), migrateTo: 5 });
  const old = createEngine({
    storage,
    embedder: null,
    clock: { now: () => Date.now() },
    logger: quiet,
    policy: resolvePolicy(),
    summariser: createOfflineEpisodeSummariser(),
    merger: createOfflineMemoryMerger(),
    dreamer: null,
    extractor: createOfflineExtractor(),
  });
  for (let channel = 0; channel < channels; channel++) {
    await old.putChannel({ id: `c${channel}`, visibility: 'public', members: [`u${channel}`, `v${channel}`] });
  }
  const batch = [];
  for (let index = 0; index < messages; index++) {
    const channel = index % channels;
    const word = `${words[index % words.length]}${index}`;
    batch.push({
      channelId: `c${channel}`,
      sender: index % 2 === 0 ? `u${channel}` : `v${channel}`,
      senderName: index % 2 === 0 ? `U${channel}` : `V${channel}`,
      content:
        index % 2 === 0
          ? `The staging ${things[index % things.length]} password rotates at ${word}`
          : `I prefer the ${word} ${things[index % things.length]} whenever I travel`,
    });
    if (batch.length === 200 || index === messages - 1) {
      await old.ingestMany(batch.splice(0));
      await old.whenIdle();
    }
  }
  // What an older mneme did when a channel was made private: the channel written, nothing moved.
  for (let channel = 0; privateEvery > 0 && channel < channels; channel += privateEvery) {
    await storage.memberships.putChannel({ id: `c${channel}`, visibility: 'private' }, Date.now());
  }
  const before = await old.stats();
  await old.close();

  const timedOpen = async () => {
    const started = performance.now();
    const mneme = await createMneme({ path, logger: quiet });
    const ms = performance.now() - started;
    return { mneme, ms };
  };
  const upgrade = await timedOpen();
  const after = await upgrade.mneme.list({ scope: 'global', limit: 1 });
  const globals = (await upgrade.mneme.stats()).byScope ?? null;
  await upgrade.mneme.close();
  const again = await timedOpen();
  await again.mneme.close();
  console.log(
    JSON.stringify({
      store,
      messages,
      channels,
      memories: before.total ?? before,
      scopesBefore: before.byScope ?? null,
      scopesAfter: globals,
      globalLeft: after.memories.length,
      upgradeOpenMs: Math.round(upgrade.ms),
      plainOpenMs: Math.round(again.ms),
    }),
  );
} finally {
  rmSync(folder, { recursive: true, force: true });
}
