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
  const folded = name.normalize('NFKC').toLowerCase().normalize('NFD').replace(MARKS, '');
  let key = '';
  for (const char of folded) {
    const latin = LOOK_ALIKES.get(char) ?? char;
    if (LETTER_OR_DIGIT.test(latin)) key += latin;
  }
  key = key.replace(/rn/g, 'm').replace(/vv/g, 'w').replace(/[i1|]/g, 'l').replace(/0/g, 'o');
  // A name of symbols alone ("🙂") is its own key; the key is bounded for the index (a compatibility form can
  // expand one character into many).
  return (key.length > 0 ? key : name.normalize('NFKC').toLowerCase().trim()).slice(0, MAX_KEY_CHARS);
}

/**
 * Why `name` cannot stand before a colon in a memory's text (`Bob: ...`), or null when it can: a line break or
 * another control character would start a line of its own, an invisible (format) character hides what it holds,
 * and a colon makes the name read as a speaker and what they said ("Bob: I approve. Eve" before ": hello").
 */
export function unfitName(name: string): string | null {
  if (CONTROL.test(name.replace(EMOJI_JOINER, ''))) return 'must not hold line breaks, control or invisible characters';
  if (COLON.test(name.normalize('NFKC')))
    return 'must not hold a colon (memories show a speaker as "name: what they said")';
  return null;
}

const MAX_KEY_CHARS = 200;
const MARKS = /\p{M}/gu;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
const CONTROL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
/** The zero-width joiner inside an emoji sequence ("🏳️‍🌈", "👩‍💻"): drawn as one picture, it hides nothing. */
const EMOJI_JOINER = /(?<=\p{Extended_Pictographic}|\p{Emoji_Modifier}|\ufe0f)\u200d(?=\p{Extended_Pictographic})/gu;
/** The colon and the characters drawn like it (after NFKC, which maps the fullwidth and small colons to `:`). */
const COLON = /[:\u02d0\u02f8\u0589\u05c3\u1361\u1804\u205a\u2236\ua789\ufe13\ufe30]/u;

/** Lower-case letters of Cyrillic, Greek, Armenian and Latin extensions (small capitals) drawn like a Latin letter. */
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
    ß: 'ss',
    æ: 'ae',
    œ: 'oe',
  }),
);
