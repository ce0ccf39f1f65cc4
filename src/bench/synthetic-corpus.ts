import { createSeededRandom, deriveSeed, type SeededRandom } from './seeded-random.js';

/** Personal memories are spread over this many users ... */
export const BENCH_USERS = 100;
/** ... and room memories over this many rooms. */
export const BENCH_ROOMS = 20;
/**
 * The share of each scope. Half the store is global, so the unscoped viewer (no ids: it sees global
 * memories) and the viewer scoped to one user (global plus that user's personal memories) both search
 * about half the rows; 40% personal over 100 users, 10% room over 20 rooms.
 */
export const SCOPE_SHARES = { global: 0.5, personal: 0.4, room: 0.1 } as const;

/** One synthetic memory, as `remember` takes it, with its vector. */
export interface SyntheticMemory {
  index: number;
  content: string;
  scope: 'global' | 'personal' | 'room';
  userId?: string;
  channelId?: string;
  /** A unit vector near its topic's centroid. */
  vector: Float32Array;
}

/** One synthetic recall: a few words of a target memory, and a vector near the target's. */
export interface SyntheticQuery {
  text: string;
  vector: Float32Array;
  /** The memory the query was drawn from. */
  target: number;
  /** The user of the scoped viewer that asks it. */
  userId: string;
}

/** One synthetic chat message, for ingest throughput: some carry the signals the offline extractor looks for. */
export interface SyntheticMessage {
  channelId: string;
  userId: string;
  userName: string;
  content: string;
}

export interface SyntheticCorpusOptions {
  seed: number;
  /** Vector length; 768 by default (nomic-embed-text). */
  dimensions?: number;
  /** Distinct words; 20,000 by default. */
  vocabularySize?: number;
}

/** A deterministic, index-addressable corpus: item `i` is the same whatever was generated before it. */
export interface SyntheticCorpus {
  readonly dimensions: number;
  /** Words by frequency rank, most frequent first. */
  readonly vocabulary: readonly string[];
  memory(index: number): SyntheticMemory;
  /** Query `index` against a store of `storeSize` memories. */
  query(index: number, storeSize: number): SyntheticQuery;
  message(index: number): SyntheticMessage;
}

/** The commonest English words, most frequent first: the head of the Zipf distribution. */
const commonWords = `the of and to a in is it you that he was for on are with as his they be at one have this from
  or had by not word but what some we can out other were all there when up use your how said an each she which do
  their time if will way about many then them write would like so these her long make thing see him two has look
  more day could go come did number sound no most people my over know water than call first who may down side been
  now find any new work part take get place made live where after back little only round man year came show every
  good me give our under name very through just form sentence great think say help low line differ turn cause much
  mean before move right boy old too same tell does set three want air well also play small end put home read hand
  port large spell add even land here must big high such follow act why ask men change went light kind off need
  house picture try us again animal point mother world near build self earth father head stand own page should
  country found answer school grow study still learn plant cover food sun four between state keep eye never last
  let thought city tree cross farm hard start might story saw far sea draw left late run while press close night
  real life few north open seem together next white children begin got walk example ease paper group always music
  those both mark often letter until mile river car feet care second book carry took science eat room friend began
  idea fish mountain stop once base hear horse cut sure watch color face wood main enough plain girl usual young
  ready above ever red list though feel talk bird soon body dog family direct pose leave song measure door product
  black short numeral class wind question happen complete ship area half rock order fire south problem piece told
  knew pass since top whole king space heard best hour better true during hundred five remember step early hold
  west ground interest reach fast verb sing listen six table travel less morning ten simple several vowel toward
  war lay against pattern slow center love person money serve appear road map rain rule govern pull cold notice
  voice unit power town fine certain fly fall lead cry dark machine note wait plan figure star box noun field rest
  correct able pound done beauty drive stood contain front teach week final gave green quick develop ocean warm
  free minute strong special mind behind clear tail produce fact street inch multiply nothing course stay wheel
  full force blue object decide surface deep moon island foot system busy test record boat common gold possible
  plane stead dry wonder laugh thousand ago ran check game shape equate hot miss brought heat snow tire bring yes
  distant fill east paint language among`
  .split(/\s+/)
  .filter((word) => word.length > 0);

const onsets = ['b', 'c', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'z'].concat([
  'br',
  'cr',
  'dr',
  'fl',
  'gr',
  'pl',
  'pr',
  'sh',
  'st',
  'th',
  'tr',
  'ch',
  'sl',
  'sp',
  'bl',
  'cl',
  'gl',
  'qu',
]);
const vowels = ['a', 'e', 'i', 'o', 'u', 'a', 'e', 'i', 'o', 'ai', 'ea', 'ee', 'oo', 'ou', 'ie', 'y'];
const codas = ['', '', '', 'n', 'r', 's', 't', 'l', 'm', 'nd', 'st', 'ng', 'ck', 'rt', 'nt', 'sh', 'x'];

const TOPICS = 64;
const TOPIC_KEYWORDS = 50;
/** Share of a memory's words drawn from its topic's keywords rather than from the whole vocabulary. */
const TOPIC_WORD_SHARE = 0.2;
/** Zipf exponent of word frequencies; about 1 in English. */
const ZIPF_EXPONENT = 1.0;
/** Within a topic, keywords are used more evenly. */
const TOPIC_ZIPF_EXPONENT = 0.7;
/** Cosine of a memory's vector with its topic centroid, and of a query's vector with its target's, on average. */
const MEMORY_TOPIC_COSINE = 0.6;
const QUERY_TARGET_COSINE = 0.8;
/** Ranks below this are function words: queries are made of the words after them. */
const CONTENT_WORD_RANK = 100;

/**
 * Builds the corpus for a seed: a vocabulary of common English words followed by pronounceable
 * made-up words, sampled with a Zipf distribution; 64 topics, each with its own keywords and a
 * centroid vector, so that texts and vectors of one topic resemble each other as real ones do.
 */
export function createSyntheticCorpus(options: SyntheticCorpusOptions): SyntheticCorpus {
  const seed = options.seed >>> 0;
  const dimensions = options.dimensions ?? 768;
  const vocabularySize = Math.max(options.vocabularySize ?? 20_000, commonWords.length + TOPIC_KEYWORDS);
  const vocabulary = buildVocabulary(createSeededRandom(deriveSeed(seed, 0, 1)), vocabularySize);
  const zipf = zipfTable(vocabularySize, ZIPF_EXPONENT);
  const topicZipf = zipfTable(TOPIC_KEYWORDS, TOPIC_ZIPF_EXPONENT);

  const topicRandom = createSeededRandom(deriveSeed(seed, 0, 2));
  const centroids = Array.from({ length: TOPICS }, () => unitVector(topicRandom, dimensions));
  const keywords = Array.from({ length: TOPICS }, () =>
    Array.from(
      { length: TOPIC_KEYWORDS },
      () => CONTENT_WORD_RANK * 3 + topicRandom.below(vocabularySize - CONTENT_WORD_RANK * 3),
    ),
  );
  const names = Array.from({ length: BENCH_USERS }, (_, user) => capitalise(vocabulary[2_000 + user * 7] ?? 'user'));
  const memoryNoise = noiseFor(MEMORY_TOPIC_COSINE, dimensions);
  const queryNoise = noiseFor(QUERY_TARGET_COSINE, dimensions);

  function wordRanks(random: SeededRandom, topic: number, count: number): number[] {
    const topicWords = keywords[topic] ?? [];
    return Array.from({ length: count }, () =>
      random.next() < TOPIC_WORD_SHARE ? (topicWords[sample(topicZipf, random)] ?? 0) : sample(zipf, random),
    );
  }

  function memoryParts(index: number) {
    const random = createSeededRandom(deriveSeed(seed, index, 3));
    const topic = random.below(TOPICS);
    const ranks = wordRanks(random, topic, 8 + random.below(23));
    const roll = random.next();
    const scope: SyntheticMemory['scope'] =
      roll < SCOPE_SHARES.global ? 'global' : roll < SCOPE_SHARES.global + SCOPE_SHARES.personal ? 'personal' : 'room';
    const owner = scope === 'personal' ? random.below(BENCH_USERS) : scope === 'room' ? random.below(BENCH_ROOMS) : 0;
    const vector = near(centroids[topic] ?? [], random, memoryNoise);
    return { ranks, scope, owner, vector };
  }

  return {
    dimensions,
    vocabulary,

    memory(index) {
      const { ranks, scope, owner, vector } = memoryParts(index);
      return {
        index,
        content: sentence(ranks.map((rank) => vocabulary[rank] ?? '')),
        scope,
        ...(scope === 'personal' ? { userId: userIdOf(owner) } : {}),
        ...(scope === 'room' ? { channelId: `room-${owner}` } : {}),
        vector,
      };
    },

    query(index, storeSize) {
      const random = createSeededRandom(deriveSeed(seed, index, 4));
      const target = random.below(Math.max(1, storeSize));
      const { ranks, vector, scope, owner } = memoryParts(target);
      const content = [...new Set(ranks.filter((rank) => rank >= CONTENT_WORD_RANK))];
      const pool = content.length > 0 ? content : ranks;
      const wanted = Math.min(pool.length, 2 + random.below(4));
      const chosen: number[] = [];
      while (chosen.length < wanted) {
        const rank = pool[random.below(pool.length)] ?? 0;
        if (!chosen.includes(rank)) chosen.push(rank);
      }
      return {
        text: chosen.map((rank) => vocabulary[rank] ?? '').join(' '),
        vector: near(vector, random, queryNoise),
        target,
        userId: userIdOf(scope === 'personal' ? owner : random.below(BENCH_USERS)),
      };
    },

    message(index) {
      const random = createSeededRandom(deriveSeed(seed, index, 5));
      const user = random.below(BENCH_USERS);
      const topic = random.below(TOPICS);
      const words = wordRanks(random, topic, 6 + random.below(15)).map((rank) => vocabulary[rank] ?? '');
      const template = messageTemplates[random.below(messageTemplates.length)] ?? ((text: string) => text);
      return {
        channelId: `room-${random.below(BENCH_ROOMS)}`,
        userId: userIdOf(user),
        userName: names[user] ?? `User ${user}`,
        content: template(words.join(' ')),
      };
    },
  };
}

function userIdOf(user: number): string {
  return `user-${user}`;
}

/** Half the messages carry a signal the offline extractor reacts to (first person, preferences, "we"). */
const messageTemplates: Array<(text: string) => string> = [
  (text) => `I prefer ${text}.`,
  (text) => `My favourite thing is ${text}.`,
  (text) => `I'm working on ${text}.`,
  (text) => `We always ${text}.`,
  (text) => sentence(text.split(' ')),
  (text) => sentence(text.split(' ')),
  (text) => `${sentence(text.split(' ')).slice(0, -1)}?`,
  (text) => sentence(text.split(' ')),
];

function buildVocabulary(random: SeededRandom, size: number): string[] {
  const words = [...new Set(commonWords)];
  const seen = new Set(words);
  while (words.length < size) {
    // Frequent words are short, rare ones long, as in English.
    const syllables = words.length < 2_000 ? 1 + random.below(2) : 2 + random.below(2);
    let word = '';
    for (let syllable = 0; syllable < syllables; syllable++) {
      word += (onsets[random.below(onsets.length)] ?? '') + (vowels[random.below(vowels.length)] ?? '');
    }
    word += codas[random.below(codas.length)] ?? '';
    if (!seen.has(word)) {
      seen.add(word);
      words.push(word);
    }
  }
  return words;
}

/** Cumulative Zipf weights `1 / rank^exponent`, normalised to end at 1. */
function zipfTable(size: number, exponent: number): Float64Array {
  const table = new Float64Array(size);
  let total = 0;
  for (let rank = 0; rank < size; rank++) {
    total += 1 / (rank + 1) ** exponent;
    table[rank] = total;
  }
  for (let rank = 0; rank < size; rank++) table[rank] = (table[rank] ?? 0) / total;
  return table;
}

/** A rank drawn from a cumulative table (binary search). */
function sample(table: Float64Array, random: SeededRandom): number {
  const target = random.next();
  let low = 0;
  let high = table.length - 1;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((table[middle] ?? 1) < target) low = middle + 1;
    else high = middle;
  }
  return low;
}

function sentence(words: readonly string[]): string {
  const text = words.filter((word) => word.length > 0).join(' ');
  return `${capitalise(text)}.`;
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function unitVector(random: SeededRandom, dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions);
  for (let index = 0; index < dimensions; index++) vector[index] = random.normal();
  return normalise(vector);
}

/** The per-dimension deviation of Gaussian noise that leaves a unit vector at about `cosine` from where it was. */
function noiseFor(cosine: number, dimensions: number): number {
  return Math.sqrt((1 / cosine ** 2 - 1) / dimensions);
}

function near(centre: ArrayLike<number>, random: SeededRandom, deviation: number): Float32Array {
  const vector = new Float32Array(centre.length);
  for (let index = 0; index < centre.length; index++)
    vector[index] = (centre[index] ?? 0) + random.normal() * deviation;
  return normalise(vector);
}

function normalise(vector: Float32Array): Float32Array {
  let norm = 0;
  for (const value of vector) norm += value * value;
  const scale = norm === 0 ? 0 : 1 / Math.sqrt(norm);
  for (let index = 0; index < vector.length; index++) vector[index] = (vector[index] ?? 0) * scale;
  return vector;
}
