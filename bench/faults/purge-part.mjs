// purge: a user says distinctive words (messages, exchanges, manual memories, a display name), the
// extraction worker turns them into memories, an administrator key purges the user over HTTP
// (DELETE /api/users/{id}/data), the server stops cleanly, and the raw bytes of the database file and
// its -wal and -shm are scanned for each word.
import { join } from 'node:path';
import { runMneme, sleep, startServer } from './child-processes.mjs';
import { byteHits, databaseFiles, openDatabase, pendingMessages, withDatabase } from './database-checks.mjs';
import { jsonOf, send } from './http-client.mjs';
import { distinctiveWords, seededRandom } from './seeded-text.mjs';

/** Rows that still hold one of the words, read through SQL (what a query could still return). */
function rowsHolding(database, words) {
  const sources = [
    'SELECT content AS text FROM messages',
    'SELECT content AS text FROM memories',
    'SELECT search_context AS text FROM memories WHERE search_context IS NOT NULL',
    'SELECT snapshot || changes AS text FROM memory_versions',
    'SELECT display_name AS text FROM users WHERE display_name IS NOT NULL',
  ];
  let rows = 0;
  for (const source of sources) {
    for (const { text } of database.prepare(source).all()) {
      const lower = String(text).toLowerCase();
      if (words.some((word) => lower.includes(word))) rows++;
    }
  }
  return rows;
}

export async function purgeScan({ folder, seed, wordCount, log }) {
  const database = join(folder, 'purge.db');
  const random = seededRandom(seed + 29);
  const words = distinctiveWords(random, wordCount);
  const created = await runMneme(['--db', database, '--create', '--json', 'keys', 'create', '--label', 'fault-suite']);
  if (created.code !== 0) throw new Error(`purge: could not create an administrator key: ${created.stderr}`);
  const headers = { authorization: `Bearer ${JSON.parse(created.stdout).key}` };
  const server = await startServer(database);
  const post = async (path, json, method = 'POST') => {
    const response = await send(server.url, { method, path, json, headers });
    if (response.status === undefined || response.status >= 300) {
      throw new Error(`purge: ${method} ${path} answered ${response.status ?? response.failure}: ${response.text}`);
    }
    return jsonOf(response);
  };
  const target = 'purge-target';
  const nameWord = words[0];
  await post(`/api/users/${target}`, { displayName: `Zed ${nameWord}` }, 'PUT');
  for (const [index, word] of words.entries()) {
    const channelId = index % 2 === 0 ? 'purge-room' : 'purge-dm';
    if (index % 3 === 0) {
      await post('/api/exchanges', {
        channelId,
        userId: target,
        userMessage: `I prefer ${word} tea in the morning and my sister lives in ${word}ville`,
        assistantReply: `Noted: ${word} it is.`,
      });
    } else if (index % 3 === 1) {
      await post('/api/messages', {
        channelId,
        sender: target,
        content: `We decided our team uses ${word} for the cache`,
      });
    } else {
      await post('/api/memories', {
        content: `Zed keeps the ${word} notebook on the top shelf`,
        scope: 'personal',
        userId: target,
      });
    }
    await post('/api/messages', {
      channelId: 'purge-room',
      sender: 'keeper',
      content: `I always water the plants on Monday (${index})`,
    });
  }
  const reader = openDatabase(database);
  for (let waited = 0; pendingMessages(reader) > 0 && waited < 60_000; waited += 200) await sleep(200);
  const before = {
    rows: rowsHolding(reader, words),
    keeperMessages: reader.prepare("SELECT COUNT(*) AS count FROM messages WHERE sender_id = 'keeper'").get().count,
  };
  reader.close();
  const report = await post(`/api/users/${target}/data`, undefined, 'DELETE');
  const whileRunning = byteHits(databaseFiles(database), words);
  await server.stop();
  const afterClose = byteHits(databaseFiles(database), words);
  const after = withDatabase(database, (opened) => ({
    rows: rowsHolding(opened, words),
    keeperMessages: opened.prepare("SELECT COUNT(*) AS count FROM messages WHERE sender_id = 'keeper'").get().count,
  }));
  log(
    `purge: ${words.length} words, ${before.rows} rows held them; purge deleted ${report.messages} messages and ${report.memories} memories; byte hits after close: ${afterClose.total} (${afterClose.wordsFound} words), while the server still ran: ${whileRunning.total}`,
  );
  return {
    words: words.length,
    rowsBefore: before.rows,
    purged: report,
    rowsAfter: after.rows,
    otherUserMessagesKept: after.keeperMessages === before.keeperMessages,
    byteHitsWhileRunning: whileRunning,
    byteHitsAfterClose: afterClose,
  };
}
