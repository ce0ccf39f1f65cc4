// Helper of the availability part, run as its own process: appends messages through the library
// with an extractor that never answers, so nothing is extracted, then exits without closing. What it
// leaves is a backlog: messages past every channel's extraction watermark, as after a process that
// died before its worker caught up.
//
//   node bench/faults/backlog-writer.mjs <database> <messages> <channels>
import { createMneme } from '../../dist/index.js';
import { seededRandom, userSentence } from './seeded-text.mjs';

const [database, count, channels] = process.argv.slice(2);
const stuckExtractor = { id: 'never-answers', extract: () => new Promise(() => {}) };
const mneme = await createMneme({ path: database, extractor: stuckExtractor, logger: { warn: () => {} } });
const random = seededRandom(5);
const users = ['ana', 'ben', 'cleo'];
const total = Number(count);
for (let start = 0; start < total; start += 500) {
  const batch = Array.from({ length: Math.min(500, total - start) }, (_, offset) => {
    const index = start + offset;
    return {
      channelId: `backlog-room-${index % Number(channels)}`,
      sender: users[index % users.length],
      content: userSentence(random, `backlog-${index}`),
    };
  });
  await mneme.ingestMany(batch);
}
process.stdout.write(`${JSON.stringify({ appended: total })}\n`);
process.exit(0);
