/**
 * Who or what a fact is about, read from how it starts: extracted facts name their subject first
 * ("Oz prefers dark mode", "Sam's team uses PostgreSQL 15", "Oz's sister Mia is a nurse",
 * "On 7 May 2023 Oz went hiking"). Two facts whose subjects differ are different facts however many
 * words they share, so neither deduplication nor consolidation merges them.
 */

/**
 * Words a subject cannot be: determiners and pronouns. A fact that starts with one ("The staging
 * server runs on port 8080", "It rained") has no subject this module can tell.
 */
const noSubject = new Set(
  (
    'a an the this that these those some any every each all no another such ' +
    'i me my mine you your yours he him his she her hers it its we us our ours they them their theirs ' +
    'one someone somebody something everyone everybody everything nobody nothing anyone anything there here ' +
    'is am are was were be been being do does did have has had will would shall should can could may might must ' +
    'what which who whom whose where why how'
  ).split(' '),
);

/**
 * Words that open a chat sentence before its subject ("Recently Melanie had a setback", "Glad Jon has
 * you", "Since Caroline was 17"): skipped when looking for the subject.
 */
const openers = new Set(
  (
    'on in at to for with by from of about after before during since until into onto over under between ' +
    'around through across against among within without near like ' +
    'and or but so because if when whenever while as then also just not yes yeah oh wow well plus though although ' +
    'once again still even now recently lately finally anyway anyways almost maybe perhaps really actually ' +
    'honestly unfortunately fortunately luckily sadly hopefully basically definitely totally sometimes often ' +
    'always never usually today yesterday tomorrow tonight glad wish hope guess let lets thanks thank sure ' +
    'back earlier later soon'
  ).split(' '),
);

/** At most this many opening words are skipped. */
const MAX_OPENERS = 4;

/**
 * An opening time phrase that ends in a year, as the extractor dates relative times: "On 7 May 2023",
 * "The week before 8 May 2023,".
 */
const datedOpening =
  /^(?:(?:on|in|around|by|since|during|after|before|at|the|a|few|couple|of|night|morning|afternoon|evening|days?|weeks?|weekend|months?|years?|sunday|monday|tuesday|wednesday|thursday|friday|saturday|january|february|march|april|may|june|july|august|september|october|november|december|\d{1,2})\s+)+\d{4}\b[\s,]*/i;

/** An opening phrase set off by a comma: "Yesterday at the park, Oz met Lee", "In 2020, Oz moved". */
const commaOpening =
  /^(?:on|in|at|after|before|during|since|yesterday|today|tonight|tomorrow|last|next|this|when|while|as|for|back|earlier|later|recently|lately)\b[^,.;:!?]{0,60},\s*/i;

const wordPattern = /[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu;

interface Word {
  /** Lower case, a possessive "'s" (or a bare "'" after s) dropped. */
  base: string;
  possessive: boolean;
  capitalised: boolean;
  /** What separates it from the word before: only a space keeps a name or phrase together. */
  before: string;
}

/**
 * The subject of a fact in lower case, or null when it cannot be told. The subject is the leading
 * name, as many capitalised words as follow each other ("Lee Chen"), then each possessive with what
 * it owns and the name after it ("Sam's team", "Oz's sister Mia"). An opening date ("On 7 May 2023 Oz
 * went hiking"), a phrase set off by a comma and opening words ("Recently", "Glad", "Since") are
 * skipped; a determiner or pronoun there means no subject ("The server ...", "It ..."). Case does not
 * matter: "sam's team" and "Sam's team" are the same subject.
 *
 * With the `speaker` whose words the fact attributes (first person rewritten into their name), a
 * subject that is not the speaker's own in a fact that names the speaker elsewhere ("Family time
 * matters to Melanie", "Since Gina lost her job, things have been tough") is taken for a word the
 * sentence happens to start with, not the person it is about: no subject. No I/O.
 */
export function factSubject(text: string, speaker?: string): string | null {
  const opening = text.trim().replaceAll('’', "'");
  const body = opening.replace(datedOpening, '').replace(commaOpening, '');
  const words = wordsOf(body);
  let index = 0;
  while (index < MAX_OPENERS && openers.has(words[index]?.base ?? '')) index++;
  const first = words[index];
  if (!first || noSubject.has(first.base.split("'")[0] ?? '')) return null;
  const parts = [first.base];
  index++;
  let possessive = first.possessive;
  if (!possessive && first.capitalised) {
    for (let word = words[index]; word && isNamePart(word); word = words[index]) {
      parts.push(word.base);
      index++;
      if (word.possessive) {
        possessive = true;
        break;
      }
    }
  }
  const owner = parts.join(' ');
  while (possessive) {
    const owned = words[index];
    if (!owned || !isOwned(owned)) break;
    parts[parts.length - 1] = `${parts[parts.length - 1]}'s`;
    parts.push(owned.base);
    index++;
    possessive = owned.possessive;
    const name = words[index];
    if (!possessive && name && isNamePart(name)) {
      parts.push(name.base);
      index++;
      possessive = name.possessive;
    }
  }
  if (speaker !== undefined && !isNamed(owner, speaker) && names(wordsOf(opening), speaker)) return null;
  return parts.join(' ');
}

/**
 * Whether two facts may be about the same subject: their subjects (`factSubject`, read with the
 * `speaker` who said both when known) are the same, or one of them cannot be told. Facts about two
 * people ("Sam's team ..." and "Lee's team ...", "Oz ..." and "Oz's sister Mia ...") are not.
 */
export function sameSubject(left: string, right: string, speaker?: string): boolean {
  const leftSubject = factSubject(left, speaker);
  const rightSubject = factSubject(right, speaker);
  return leftSubject === null || rightSubject === null || leftSubject === rightSubject;
}

/** A capitalised word right after the one before it (a space between), that can be part of a name. */
function isNamePart(word: Word): boolean {
  return word.capitalised && word.before.trim() === '' && !noSubject.has(word.base) && !openers.has(word.base);
}

/** A word right after a possessive (a space between) that can be what it owns: "team" of "Sam's team". */
function isOwned(word: Word): boolean {
  return word.before.trim() === '' && !noSubject.has(word.base) && !openers.has(word.base);
}

/** Whether `name` (lower case) is the speaker's name. */
function isNamed(name: string, speaker: string): boolean {
  return (
    name ===
    wordsOf(speaker.replaceAll('’', "'"))
      .map((word) => word.base)
      .join(' ')
  );
}

/** Whether every word of the speaker's name is among `words`. */
function names(words: readonly Word[], speaker: string): boolean {
  const name = wordsOf(speaker.replaceAll('’', "'")).map((word) => word.base);
  return name.length > 0 && name.every((part) => words.some((word) => word.base === part));
}

function wordsOf(text: string): Word[] {
  const words: Word[] = [];
  let end = 0;
  for (const match of text.matchAll(wordPattern)) {
    const raw = match[0];
    const start = match.index ?? 0;
    const bareApostrophe = /s$/i.test(raw) && text[start + raw.length] === "'";
    const possessive = /'s$/i.test(raw) || bareApostrophe;
    words.push({
      base: raw.toLowerCase().replace(/'s$/, ''),
      possessive,
      capitalised: /^\p{Lu}/u.test(raw),
      before: text.slice(end, start),
    });
    end = start + raw.length + (bareApostrophe ? 1 : 0);
  }
  return words;
}
