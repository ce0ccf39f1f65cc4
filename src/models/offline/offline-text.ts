/** The sentences of a text: split after `.`, `!` or `?` (and at line breaks), trimmed, empty ones dropped. */
export function sentencesOf(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/u)
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence.length > 0);
}

/** The sentence with a full stop added when it ends without `.`, `!`, `?` or `…`. */
export function withFullStop(sentence: string): string {
  return /[.!?…]$/u.test(sentence) ? sentence : `${sentence}.`;
}

/**
 * The text cut to at most `maxChars` characters at a word boundary, with `…` when cut; never between the two
 * halves of a surrogate pair (an emoji), which would leave ill-formed text.
 */
export function clip(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = text.slice(0, maxChars - 1).replace(/[\ud800-\udbff]$/, '');
  const lastSpace = cut.lastIndexOf(' ');
  return `${(lastSpace > maxChars / 2 ? cut.slice(0, lastSpace) : cut).replace(/[\s,;:]+$/u, '')}…`;
}
