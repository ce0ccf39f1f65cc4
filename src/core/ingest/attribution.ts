/**
 * Rewrites first-person text into the speaker's name, so a memory says who it is about
 * ("I prefer dark mode" by Oz -> "Oz prefers dark mode"), never "the user".
 */

/** Words that may sit between "I" and its verb ("I really like"). Words ending in -ly count too. */
const adverbs = new Set(
  (
    'also just still always never often sometimes usually actually totally absolutely definitely mostly only ' +
    'even recently finally already honestly truly currently generally rarely seldom occasionally kinda literally ' +
    'seriously personally typically normally probably certainly genuinely completely simply particularly ' +
    'especially mainly basically now then so sort kind of much'
  ).split(' '),
);

/** Verbs that end in -ly, so are not taken for adverbs. */
const verbsEndingInLy = new Set(['fly', 'reply', 'apply', 'rely', 'supply', 'multiply', 'comply', 'imply', 'rally']);

/** Words after "I" that stay as they are: modals, past forms, and words that are not verbs. */
const unchangedAfterSubject = new Set(
  (
    "can could will would shall should may might must cannot can't couldn't won't wouldn't shouldn't mustn't " +
    "was wasn't were weren't did didn't had hadn't used ought need'nt and or but too to the a an in on at as " +
    'with for of if when while who that which'
  ).split(' '),
);

/** Irregular past tenses and participles (regular ones end in -ed). */
const irregularPast = new Set(
  (
    'went gone got gotten saw seen made took taken came found gave given knew known left felt bought met ran ' +
    'wrote written thought told said began begun became brought built caught chose chosen drew drawn drove ' +
    'driven ate eaten fell fallen fought flew flown forgot forgotten grew grown heard held kept lost paid put ' +
    'read rode sang sung sat slept spent stood swam swum taught threw thrown understood woke woken won wore worn ' +
    'been done had did was were broke broken hung led lit meant quit sent set shot shut sold spoke spoken stuck ' +
    'struck swore tore torn won wound'
  ).split(' '),
);

const irregularPresent: Record<string, string> = {
  am: 'is',
  have: 'has',
  do: 'does',
  go: 'goes',
  be: 'is',
  "don't": "doesn't",
  "haven't": "hasn't",
  "'m": 'is',
  wanna: 'wants to',
  gotta: 'has to',
};

/** The third-person singular present of a base-form verb: prefer -> prefers, study -> studies, watch -> watches. */
export function thirdPersonSingular(verb: string): string {
  const lower = verb.toLowerCase();
  const irregular = irregularPresent[lower];
  if (irregular !== undefined) return matchCase(irregular, verb);
  let result: string;
  if (/(?:s|sh|ch|x|z|o)$/.test(lower)) result = `${lower}es`;
  else if (/[^aeiou]y$/.test(lower)) result = `${lower.slice(0, -1)}ies`;
  else result = `${lower}s`;
  return matchCase(result, verb);
}

function matchCase(word: string, like: string): string {
  return like.length > 0 && like === like.toUpperCase() && like.length > 1
    ? word.toUpperCase()
    : like[0] === like[0]?.toUpperCase()
      ? word.charAt(0).toUpperCase() + word.slice(1)
      : word;
}

function isAdverb(lower: string): boolean {
  return adverbs.has(lower) || (lower.length > 4 && lower.endsWith('ly') && !verbsEndingInLy.has(lower));
}

function isPastForm(lower: string): boolean {
  return irregularPast.has(lower) || (lower.length > 3 && lower.endsWith('ed'));
}

/** Options of `attributeToSpeaker`. */
export interface AttributionOptions {
  /**
   * Who "we" and "us" are when the speaker said so earlier ("my family"): "we" becomes
   * "Oz and Oz's family". Without it "we" becomes "Oz and others".
   */
  companion?: string | null;
}

/**
 * Replaces the first person with `name`: I -> Oz (the verb after it agrees: "I prefer" -> "Oz
 * prefers", "I'm" -> "Oz is", "I don't" -> "Oz doesn't"), me -> Oz, my/mine -> Oz's, myself ->
 * themselves, we/us -> "Oz and others" (or "Oz and Oz's family" with a companion), our -> Oz's.
 * Anything else is left as written.
 */
export function attributeToSpeaker(text: string, name: string, options: AttributionOptions = {}): string {
  const group = options.companion ? `${name} and ${name}'s ${options.companion}` : `${name} and others`;
  const tokens = text.replaceAll('’', "'").split(/([\p{L}\p{N}]+(?:'[\p{L}]+)*)/u);
  // split with a capture group: odd indexes are words, even indexes the text between them.
  let expectVerb = false;
  for (let index = 1; index < tokens.length; index += 2) {
    const word = tokens[index] ?? '';
    const lower = word.toLowerCase();
    const between = tokens[index - 1] ?? '';
    if (expectVerb && /^[\s,]*$/.test(between) && !between.includes(',')) {
      if (isAdverb(lower) || (lower === 'no' && (tokens[index + 2] ?? '').toLowerCase() === 'longer')) continue;
      if (lower === 'longer' && (tokens[index - 2] ?? '').toLowerCase() === 'no') continue;
      expectVerb = false;
      if (lower === 'am' && (tokens[index + 2] ?? '').toLowerCase() === 'not') {
        tokens[index] = matchCase('is', word);
      } else if (!unchangedAfterSubject.has(lower) && !isPastForm(lower) && /^[\p{L}']+$/u.test(word)) {
        tokens[index] =
          lower.endsWith('ing') || lower.endsWith("n't") ? conjugateContraction(word) : thirdPersonSingular(word);
      }
      continue;
    }
    expectVerb = false;
    const next = (tokens[index + 2] ?? '').toLowerCase();
    switch (lower) {
      case 'i':
        tokens[index] = name;
        expectVerb = true;
        break;
      case "i'm":
      case 'im':
        tokens[index] = `${name} is`;
        break;
      case "i've":
        tokens[index] = `${name} has`;
        break;
      case "i'll":
        tokens[index] = `${name} will`;
        break;
      case "i'd":
        tokens[index] = `${name} ${isPastForm(next) || next === 'better' ? 'had' : 'would'}`;
        break;
      case 'me':
        tokens[index] = name;
        break;
      case 'my':
      case 'mine':
        tokens[index] = `${name}'s`;
        break;
      case 'myself':
      case 'ourselves':
        tokens[index] = 'themselves';
        break;
      case 'we':
      case 'us':
        tokens[index] = group;
        break;
      case "we're":
        tokens[index] = `${group} are`;
        break;
      case "we've":
        tokens[index] = `${group} have`;
        break;
      case "we'll":
        tokens[index] = `${group} will`;
        break;
      case "we'd":
        tokens[index] = `${group} ${isPastForm(next) || next === 'better' ? 'had' : 'would'}`;
        break;
      case 'our':
      case 'ours':
        tokens[index] = `${name}'s`;
        break;
    }
  }
  const result = tokens.join('');
  return result.charAt(0).toUpperCase() + result.slice(1);
}

/** "don't" -> "doesn't", "haven't" -> "hasn't"; other words ending in n't or -ing stay as they are. */
function conjugateContraction(word: string): string {
  const irregular = irregularPresent[word.toLowerCase()];
  return irregular === undefined ? word : matchCase(irregular, word);
}
