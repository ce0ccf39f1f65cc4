// Messages per second of `mneme ingest` with the offline extractor, on a database file, measured
// through the built CLI (append, background extraction, exchange memories, waiting for idle).
//
//   npm run build && node bench/ingest-throughput.mjs [--messages 10000] [--path file.db]
//
// The messages are the turns of the LoCoMo development split (../shared/bench/locomo/), two people
// chatting, repeated with new channel ids until there are enough, one minute apart; without that file,
// generated chat lines. Each speaker is a user with a display name, so facts are attributed by name.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { messages: { type: 'string', default: '10000' }, path: { type: 'string' } },
});
const count = Number(values.messages);
const root = dirname(dirname(fileURLToPath(import.meta.url)));
const locomo = join(root, '..', 'shared', 'bench', 'locomo', 'locomo-dev.json');

function turns() {
  if (existsSync(locomo)) {
    return JSON.parse(readFileSync(locomo, 'utf8')).flatMap((sample) => {
      const sessions = Object.keys(sample.conversation).filter((key) => /^session_\d+$/.test(key));
      return sessions.flatMap((session) =>
        sample.conversation[session].map((turn) => ({ id: sample.sample_id, speaker: turn.speaker, text: turn.text })),
      );
    });
  }
  const subjects = ['hiking', 'my sister', 'the new job', 'painting', 'our team', 'the trip to Oslo', 'my dog'];
  return Array.from({ length: 700 }, (_, index) => ({
    id: `generated-${index % 7}`,
    speaker: index % 2 === 0 ? 'Ana' : 'Ben',
    text: `I went ${['yesterday', 'last week', 'today'][index % 3]} and talked about ${subjects[index % subjects.length]}; I really enjoy it.`,
  }));
}

const source = turns();
const folder = mkdtempSync(join(tmpdir(), 'mneme-ingest-bench-'));
const input = join(folder, 'messages.jsonl');
const database = values.path ?? join(folder, 'bench.db');
const start = Date.parse('2023-05-08T13:56:00.000Z');
const lines = Array.from({ length: count }, (_, index) => {
  const turn = source[index % source.length];
  const round = Math.floor(index / source.length);
  return JSON.stringify({
    channelId: `${turn.id}-${round}`,
    sender: turn.speaker.toLowerCase(),
    senderName: turn.speaker,
    content: turn.text,
    createdAt: new Date(start + index * 60_000).toISOString(),
  });
});
writeFileSync(input, `${lines.join('\n')}\n`);

try {
  const output = execFileSync(
    process.execPath,
    [join(root, 'dist', 'cli', 'mneme.js'), '--db', database, '--json', 'ingest', '--no-progress', input],
    { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
  );
  const summary = JSON.parse(output);
  console.log(
    `${summary.messages} messages (${existsSync(locomo) ? 'LoCoMo dev turns' : 'generated'}) into ${values.path ?? 'a new database file'}: ` +
      `${summary.seconds.toFixed(1)} s, ${summary.messagesPerSecond} messages/s, ${summary.newMemories} new memories, ` +
      `${summary.droppedJobs} dropped queue jobs (caught up)`,
  );
} finally {
  rmSync(folder, { recursive: true, force: true });
}
