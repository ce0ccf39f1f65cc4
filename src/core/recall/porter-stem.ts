/**
 * The Porter stemmer (M. F. Porter, "An algorithm for suffix stripping", 1980), as the full-text index's
 * `porter` tokenizer applies it: `editors` and `editor` give `editor`, `moved` and `moving` give `move`. Used
 * where core must tell which query words a memory contains the way the index would. Words of one or two
 * characters, and words with anything but a-z and 0-9, are returned as they are; a digit counts as a
 * consonant, as in the index (`4ms` gives `4m`, `utf8s` gives `utf8`).
 */
export function porterStem(word: string): string {
  if (word.length <= 2 || !/^[a-z0-9]+$/.test(word)) return word;
  let stem = step1a(word);
  stem = step1b(stem);
  stem = step1c(stem);
  stem = replaceLongest(stem, step2Rules, 0);
  stem = replaceLongest(stem, step3Rules, 0);
  stem = step4(stem);
  return step5(stem);
}

function isConsonant(word: string, index: number): boolean {
  const letter = word[index];
  if (letter === 'a' || letter === 'e' || letter === 'i' || letter === 'o' || letter === 'u') return false;
  if (letter === 'y') return index === 0 || !isConsonant(word, index - 1);
  return true;
}

/** The number of vowel-consonant sequences in `stem` (Porter's m). */
function measure(stem: string): number {
  let count = 0;
  let index = 0;
  while (index < stem.length && isConsonant(stem, index)) index++;
  while (index < stem.length) {
    while (index < stem.length && !isConsonant(stem, index)) index++;
    if (index >= stem.length) break;
    count++;
    while (index < stem.length && isConsonant(stem, index)) index++;
  }
  return count;
}

function hasVowel(stem: string): boolean {
  for (let index = 0; index < stem.length; index++) if (!isConsonant(stem, index)) return true;
  return false;
}

function endsWithDoubleConsonant(stem: string): boolean {
  const last = stem.length - 1;
  return last >= 1 && stem[last] === stem[last - 1] && isConsonant(stem, last);
}

/** Consonant, vowel, consonant at the end, the last not w, x or y (Porter's *o). */
function endsCvc(stem: string): boolean {
  const last = stem.length - 1;
  if (last < 2) return false;
  const final = stem[last] ?? '';
  return (
    isConsonant(stem, last) &&
    !isConsonant(stem, last - 1) &&
    isConsonant(stem, last - 2) &&
    final !== 'w' &&
    final !== 'x' &&
    final !== 'y'
  );
}

// As the index's stemmer: `sses` and `ies` are suffixes of a longer word only ("ies" gives "ie", "sses" "sse").
function step1a(word: string): string {
  if (word.endsWith('sses') && word.length > 4) return word.slice(0, -2);
  if (word.endsWith('ies') && word.length > 3) return word.slice(0, -2);
  if (word.endsWith('ss')) return word;
  if (word.endsWith('s')) return word.slice(0, -1);
  return word;
}

// `eed` too: "eed" itself is stemmed as a word ending in `ed` ("e"), as the index does.
function step1b(word: string): string {
  if (word.endsWith('eed') && word.length > 3) return measure(word.slice(0, -3)) > 0 ? word.slice(0, -1) : word;
  for (const suffix of ['ed', 'ing']) {
    if (!word.endsWith(suffix)) continue;
    const stem = word.slice(0, -suffix.length);
    if (!hasVowel(stem)) return word;
    if (stem.endsWith('at') || stem.endsWith('bl') || stem.endsWith('iz')) return `${stem}e`;
    if (endsWithDoubleConsonant(stem) && !/[lsz]$/.test(stem)) return stem.slice(0, -1);
    if (measure(stem) === 1 && endsCvc(stem)) return `${stem}e`;
    return stem;
  }
  return word;
}

function step1c(word: string): string {
  return word.endsWith('y') && hasVowel(word.slice(0, -1)) ? `${word.slice(0, -1)}i` : word;
}

type Rule = readonly [suffix: string, replacement: string];

const step2Rules: readonly Rule[] = [
  ['ational', 'ate'],
  ['tional', 'tion'],
  ['enci', 'ence'],
  ['anci', 'ance'],
  ['izer', 'ize'],
  ['bli', 'ble'],
  ['alli', 'al'],
  ['entli', 'ent'],
  ['eli', 'e'],
  ['ousli', 'ous'],
  ['ization', 'ize'],
  ['ation', 'ate'],
  ['ator', 'ate'],
  ['alism', 'al'],
  ['iveness', 'ive'],
  ['fulness', 'ful'],
  ['ousness', 'ous'],
  ['aliti', 'al'],
  ['iviti', 'ive'],
  ['biliti', 'ble'],
  ['logi', 'log'],
];

const step3Rules: readonly Rule[] = [
  ['icate', 'ic'],
  ['ative', ''],
  ['alize', 'al'],
  ['iciti', 'ic'],
  ['ical', 'ic'],
  ['ful', ''],
  ['ness', ''],
];

/** Replaces the longest of `rules`' suffixes that `word` ends with, when what stays has a measure above `minMeasure`. */
function replaceLongest(word: string, rules: readonly Rule[], minMeasure: number): string {
  let best: Rule | undefined;
  for (const rule of rules) if (word.endsWith(rule[0]) && (!best || rule[0].length > best[0].length)) best = rule;
  if (!best) return word;
  const stem = word.slice(0, -best[0].length);
  return measure(stem) > minMeasure ? stem + best[1] : word;
}

const step4Suffixes = [
  'al',
  'ance',
  'ence',
  'er',
  'ic',
  'able',
  'ible',
  'ant',
  'ement',
  'ment',
  'ent',
  'ion',
  'ou',
  'ism',
  'ate',
  'iti',
  'ous',
  'ive',
  'ize',
];

function step4(word: string): string {
  let best = '';
  for (const suffix of step4Suffixes) if (word.endsWith(suffix) && suffix.length > best.length) best = suffix;
  if (best === '') return word;
  const stem = word.slice(0, -best.length);
  if (measure(stem) <= 1) return word;
  if (best === 'ion' && !/[st]$/.test(stem)) return word;
  return stem;
}

function step5(word: string): string {
  let stem = word;
  if (stem.endsWith('e')) {
    const before = stem.slice(0, -1);
    const m = measure(before);
    if (m > 1 || (m === 1 && !endsCvc(before))) stem = before;
  }
  if (measure(stem) > 1 && endsWithDoubleConsonant(stem) && stem.endsWith('l')) stem = stem.slice(0, -1);
  return stem;
}
