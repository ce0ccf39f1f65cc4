// Deterministic randomness and conversation text for the fault suite: the same seed gives the same
// kill moments, messages and fuzz mutations on every run.

/** mulberry32: a small seeded generator of numbers in [0, 1). */
export function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = (random, list) => list[Math.floor(random() * list.length)];
export const between = (random, low, high) => low + Math.floor(random() * (high - low + 1));

const places = ['Oslo', 'Lisbon', 'Kyoto', 'Quito', 'Tromso', 'Porto', 'Nairobi', 'Hobart'];
const drinks = ['green tea', 'black coffee', 'oat milk', 'sparkling water', 'rooibos', 'cold brew'];
const tools = ['PostgreSQL', 'Redis', 'Kafka', 'Terraform', 'Grafana', 'Nginx'];
const hobbies = ['hiking', 'painting', 'bouldering', 'sailing', 'chess', 'pottery'];

/**
 * One user message the offline extractor finds facts in (first person, preferences, family, team,
 * infrastructure). Always longer than 20 characters and never a command, so every one of them must
 * end up cited by an exchange memory once extracted. `tag` makes it unique.
 */
export function userSentence(random, tag) {
  const templates = [
    () => `I prefer ${pick(random, drinks)} in the morning, never anything else (${tag})`,
    () => `My sister lives in ${pick(random, places)} and she loves ${pick(random, hobbies)} (${tag})`,
    () => `We decided that our team ships the ${pick(random, tools)} migration next week (${tag})`,
    () => `Remember that the ${tag} server runs ${pick(random, tools)} on port ${between(random, 1000, 9999)}`,
    () => `Yesterday I went ${pick(random, hobbies)} near ${pick(random, places)} with my dog (${tag})`,
    () => `I always keep my notes about ${pick(random, hobbies)} in a paper notebook (${tag})`,
  ];
  return pick(random, templates)();
}

export function assistantSentence(random, tag) {
  return `Noted, I will remember that about ${pick(random, hobbies)} and ${pick(random, places)} (${tag}).`;
}

/** Words no dictionary, stemmer or other test contains: consonant-vowel letters ending in a consonant. */
export function distinctiveWords(random, count) {
  const consonants = 'bdfgkmnprstvz';
  const vowels = 'aeiou';
  const words = new Set();
  while (words.size < count) {
    let word = 'qx';
    for (let index = 0; index < 4; index++) word += pick(random, [...consonants]) + pick(random, [...vowels]);
    words.add(`${word}${pick(random, ['k', 'x', 'q', 'z'])}`);
  }
  return [...words];
}

/**
 * JSON lines for `mneme ingest`: messages and exchanges over `channels` channels, each line tagged
 * `<prefix>-<line number>` so the lines found in a database can be counted after a kill.
 */
export function ingestLines(random, { prefix, count, channels }) {
  const users = ['ana', 'ben', 'cleo'];
  return Array.from({ length: count }, (_, index) => {
    const tag = `${prefix}-${index + 1}`;
    const channelId = `${prefix}-room-${index % channels}`;
    const user = pick(random, users);
    if (random() < 0.4) {
      return JSON.stringify({
        channelId,
        userId: user,
        userName: user[0].toUpperCase() + user.slice(1),
        userMessage: userSentence(random, tag),
        assistantReply: assistantSentence(random, tag),
      });
    }
    return JSON.stringify({
      channelId,
      sender: user,
      senderName: user[0].toUpperCase() + user.slice(1),
      content: userSentence(random, tag),
    });
  });
}
