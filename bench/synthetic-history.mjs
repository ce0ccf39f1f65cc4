// Writes a JSON-lines history of synthetic chat messages made as `mneme bench` makes the messages it
// ingests (20 rooms, 100 users with display names, half the messages saying something about the
// speaker; the words differ from the bench's, whose corpus draws them with its 768-d vectors), for
// timing `mneme ingest` on a history of any length, deterministic from --seed:
//
//   npm run build && node bench/synthetic-history.mjs --messages 100000 > history.jsonl
//   node dist/cli/mneme.js ingest --db history.db history.jsonl
import { parseArgs } from 'node:util';
import { createSyntheticCorpus } from '../dist/bench/synthetic-corpus.js';

const { values } = parseArgs({
  options: { messages: { type: 'string', default: '100000' }, seed: { type: 'string', default: '42' } },
});
const count = Number(values.messages);
const corpus = createSyntheticCorpus({ seed: Number(values.seed), dimensions: 8 });
const lines = [];
for (let index = 0; index < count; index++) {
  const message = corpus.message(index);
  lines.push(
    JSON.stringify({
      channelId: message.channelId,
      sender: message.userId,
      senderName: message.userName,
      content: message.content,
    }),
  );
  if (lines.length === 1000) process.stdout.write(`${lines.splice(0).join('\n')}\n`);
}
if (lines.length > 0) process.stdout.write(`${lines.join('\n')}\n`);
