// A client that keeps writing to a running `mneme serve` over HTTP (messages, exchanges and manual
// memories) from a few concurrent loops, and records every write the server acknowledged (2xx).
import { jsonOf, send } from './http-client.mjs';
import { assistantSentence, seededRandom, userSentence } from './seeded-text.mjs';

const users = ['ana', 'ben', 'cleo'];

/**
 * Starts `writers` loops against `url`. Each loop stops when the server is gone (connection refused or
 * reset), when `stop()` is called, or after `maxWrites` requests. Returns `{ acknowledged, refused,
 * failures, stop }`: `acknowledged` holds `{ kind, id, content }` for each acknowledged message and
 * memory, `refused` the non-2xx answers (status and detail), `failures` the requests with no answer.
 */
export function startWriteLoad(url, { seed, tag, writers = 4, channels = 4, maxWrites = 2000, timeoutMs = 15_000 }) {
  const acknowledged = [];
  const refused = [];
  const failures = [];
  let stopped = false;
  let count = 0;

  async function writer(index) {
    const random = seededRandom(seed * 1000 + index);
    for (let sequence = 0; !stopped && count < maxWrites; sequence++) {
      count++;
      const label = `${tag}-w${index}-${sequence}`;
      const user = users[sequence % users.length];
      const channelId = `${tag}-room-${(index + sequence) % channels}`;
      const roll = random();
      let request;
      if (roll < 0.4) {
        request = { path: '/api/messages', json: { channelId, sender: user, content: userSentence(random, label) } };
      } else if (roll < 0.7) {
        request = {
          path: '/api/exchanges',
          json: {
            channelId,
            userId: user,
            userMessage: userSentence(random, label),
            assistantReply: assistantSentence(random, label),
          },
        };
      } else {
        request = {
          path: '/api/memories',
          json: {
            content: `Manual note ${label}: the quarterly review is on a Thursday`,
            scope: 'personal',
            userId: user,
          },
        };
      }
      const response = await send(url, { method: 'POST', timeoutMs, ...request });
      if (response.failure) {
        failures.push({ failure: response.failure, path: request.path });
        if (response.failure === 'refused' || response.failure === 'reset') return;
        continue;
      }
      const body = jsonOf(response);
      if (response.status < 200 || response.status > 299) {
        refused.push({ status: response.status, detail: body?.detail ?? response.text.slice(0, 200) });
        continue;
      }
      if (request.path === '/api/memories') {
        acknowledged.push({ kind: 'memory', id: body.id, content: body.content });
      } else {
        for (const message of body.messages)
          acknowledged.push({ kind: 'message', id: message.id, content: message.content });
      }
    }
  }

  const loops = Array.from({ length: writers }, (_, index) => writer(index));
  return {
    acknowledged,
    refused,
    failures,
    requests: () => count,
    /** Stops the loops and waits for the requests in flight. */
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
    finished: Promise.all(loops),
  };
}
