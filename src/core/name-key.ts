/**
 * How a display name reads to a person, for telling whether two names can be taken for one (ADR 40). Display
 * names are free text that users choose for themselves (`setDisplayName`, an ingest's `senderName`), and they are
 * what memories call a speaker ("Bob: I approve the budget", "Bob prefers ..."): a name that reads like another
 * user's makes what its owner says read as said by that user. The key folds what a reader does not see: case,
 * accents, compatibility forms (fullwidth letters), invisible characters, spacing and punctuation, and letters of
 * other scripts drawn like Latin ones (Cyrillic "о", Greek "ο"), and digits and pairs drawn like letters ("0", "rn").
 * It is deliberately coarse: two names that fold to one key only cost each a label with its id.
 */
export function nameKey(name: string): string {
  // Capitals drawn like a Latin capital whose lower case differs from theirs (Greek Μ, lower case μ) are folded
  // before the case is; so are Cherokee's small letters, drawn like its capitals.
  const capitals = [...name.normalize('NFKC')]
    .map((char) => CAPITAL_LOOK_ALIKES.get(CHEROKEE_SMALL.test(char) ? char.toUpperCase() : char) ?? char)
    .join('');
  const folded = capitals.toLowerCase().normalize('NFD').replace(MARKS, '');
  let key = '';
  for (const char of folded) {
    const latin = LOOK_ALIKES.get(char) ?? char;
    if (LETTER_OR_DIGIT.test(latin) && !FILLERS.test(latin)) key += latin;
  }
  key = key.replace(/rn/g, 'm').replace(/vv/g, 'w').replace(/[i1|]/g, 'l').replace(/0/g, 'o');
  // A name of symbols alone ("🙂") is its own key; the key is bounded for the index (a compatibility form can
  // expand one character into many).
  return (key.length > 0 ? key : name.normalize('NFKC').toLowerCase().trim()).slice(0, MAX_KEY_CHARS);
}

/**
 * Why `name` cannot stand before a colon in a memory's text (`Bob: ...`), or null when it can: a line break or
 * another control character would start a line of its own, an invisible (format) character hides what it holds,
 * and a colon makes the name read as a speaker and what they said ("Bob: I approve. Eve" before ": hello"); a blank
 * name shows nobody.
 */
export function unfitName(name: string): string | null {
  // Blank (refused by the schemas; stored by an import or a build before): it would show a speaker as nobody, and
  // label every gap between two signs of a text when left (attack 30d).
  if (name.trim() === '') return 'must not be empty';
  if (CONTROL.test(name.replace(EMOJI_JOINER, ''))) return 'must not hold line breaks, control or invisible characters';
  if (COLON.test(name.normalize('NFKC')))
    return 'must not hold a colon (memories show a speaker as "name: what they said")';
  return null;
}

const MAX_KEY_CHARS = 200;
const MARKS = /\p{M}/gu;
const CHEROKEE_SMALL = /[\u13f8-\u13fd\uab70-\uabbf]/u;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
/** The Hangul fillers: letters (Lo), not format characters, but drawn as nothing ("Bob" and a filler reads "Bob"). */
const FILLERS = /[\u115f\u1160\u3164\uffa0]/u;
const CONTROL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0]/u;
/** The zero-width joiner inside an emoji sequence ("🏳️‍🌈", "👩‍💻"): drawn as one picture, it hides nothing. */
const EMOJI_JOINER = /(?<=\p{Extended_Pictographic}|\p{Emoji_Modifier}|\ufe0f)\u200d(?=\p{Extended_Pictographic})/gu;
/** The colon and the characters drawn like it (after NFKC, which maps the fullwidth and small colons to `:`). */
const COLON = /[:\u02d0\u02f8\u0589\u05c3\u1361\u1804\u205a\u2236\ua789\ufe13\ufe30]/u;

/**
 * Capitals of Greek, Cyrillic, Cherokee and Lisu drawn like a Latin capital, where their lower case is not drawn
 * like that letter's (Greek Η is H, η is n) or has no fold below: "Μax", "Ηenry", "Νina", "Υves", "Ᏼob", "ꓐob".
 */
const CAPITAL_LOOK_ALIKES = new Map<string, string>(
  Object.entries({
    Η: 'h',
    Μ: 'm',
    Ν: 'n',
    Υ: 'y',
    Ϲ: 'c',
    Ͻ: 'c',
    Ј: 'j',
    Ү: 'y',
    Ԛ: 'q',
    Ԝ: 'w',
    Ꭺ: 'a',
    Ᏼ: 'b',
    Ꮯ: 'c',
    Ꭰ: 'd',
    Ꭼ: 'e',
    Ꮐ: 'g',
    Ꮋ: 'h',
    Ꭵ: 'i',
    Ꭻ: 'j',
    Ꮶ: 'k',
    Ꮮ: 'l',
    Ꮇ: 'm',
    Ꮲ: 'p',
    Ꮢ: 'r',
    Ꮪ: 's',
    Ꭲ: 't',
    Ꮩ: 'v',
    Ꮃ: 'w',
    Ꮓ: 'z',
    ꓮ: 'a',
    ꓐ: 'b',
    ꓚ: 'c',
    ꓓ: 'd',
    ꓰ: 'e',
    ꓝ: 'f',
    ꓖ: 'g',
    ꓧ: 'h',
    ꓲ: 'i',
    ꓙ: 'j',
    ꓗ: 'k',
    ꓡ: 'l',
    ꓟ: 'm',
    ꓠ: 'n',
    ꓳ: 'o',
    ꓑ: 'p',
    ꓣ: 'r',
    ꓢ: 's',
    ꓔ: 't',
    ꓴ: 'u',
    ꓦ: 'v',
    ꓪ: 'w',
    ꓫ: 'x',
    ꓬ: 'y',
    ꓜ: 'z',
  }),
);

/**
 * Lower-case letters of Cyrillic, Greek, Armenian and Latin extensions (small capitals), and digits of other scripts,
 * drawn like a Latin letter.
 */
const LOOK_ALIKES = new Map<string, string>(
  Object.entries({
    а: 'a',
    б: 'b',
    в: 'b',
    г: 'r',
    д: 'd',
    е: 'e',
    ё: 'e',
    з: '3',
    и: 'u',
    к: 'k',
    м: 'm',
    н: 'h',
    о: 'o',
    п: 'n',
    р: 'p',
    с: 'c',
    т: 't',
    у: 'y',
    х: 'x',
    ь: 'b',
    і: 'i',
    ї: 'i',
    ј: 'j',
    ѕ: 's',
    ԁ: 'd',
    һ: 'h',
    ӏ: 'l',
    ү: 'y',
    ԛ: 'q',
    ԝ: 'w',
    α: 'a',
    β: 'b',
    γ: 'y',
    ε: 'e',
    η: 'n',
    ι: 'i',
    κ: 'k',
    μ: 'u',
    ν: 'v',
    ο: 'o',
    ρ: 'p',
    τ: 't',
    υ: 'u',
    χ: 'x',
    ω: 'w',
    ζ: 'z',
    ı: 'i',
    ɡ: 'g',
    ɑ: 'a',
    ł: 'l',
    ø: 'o',
    đ: 'd',
    ħ: 'h',
    ᴀ: 'a',
    ʙ: 'b',
    ᴄ: 'c',
    ᴅ: 'd',
    ᴇ: 'e',
    ғ: 'f',
    ɢ: 'g',
    ʜ: 'h',
    ɪ: 'i',
    ᴊ: 'j',
    ᴋ: 'k',
    ʟ: 'l',
    ᴍ: 'm',
    ɴ: 'n',
    ᴏ: 'o',
    ᴘ: 'p',
    ʀ: 'r',
    ꜱ: 's',
    ᴛ: 't',
    ᴜ: 'u',
    ᴠ: 'v',
    ᴡ: 'w',
    ʏ: 'y',
    ᴢ: 'z',
    օ: 'o',
    ս: 'u',
    ց: 'g',
    հ: 'h',
    ո: 'n',
    զ: 'q',
    // Digits of other scripts drawn as a ring like "o" (the zeros of Devanagari, Bengali, Gurmukhi, Gujarati, Oriya,
    // Tamil, Telugu, Kannada, Malayalam, Thai, Lao, Myanmar; the Arabic-Indic five) or as a stroke like "l" (the
    // Arabic-Indic ones), and the dental click ǀ. NFKC leaves them as they are.
    '\u0966': 'o',
    '\u09e6': 'o',
    '\u0a66': 'o',
    '\u0ae6': 'o',
    '\u0b66': 'o',
    '\u0be6': 'o',
    '\u0c66': 'o',
    '\u0ce6': 'o',
    '\u0d66': 'o',
    '\u0e50': 'o',
    '\u0ed0': 'o',
    '\u1040': 'o',
    '\u0665': 'o',
    '\u0661': 'l',
    '\u06f1': 'l',
    ǀ: 'l',
    ß: 'ss',
    æ: 'ae',
    œ: 'oe',
  }),
);
