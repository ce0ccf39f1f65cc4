/** Deepest nesting of arrays and objects a request body may have (a chat request's tool schemas stay far below). */
export const MAX_JSON_DEPTH = 64;

/**
 * Most items (arrays and objects, and the members and elements after the first of each) a request body may hold: a
 * batch of 1,000 messages, a list of 10,000 members, a long chat with its tools stay far below.
 */
export const MAX_JSON_ITEMS = 100_000;

/**
 * Why a JSON body is refused before it is parsed, or undefined. `JSON.parse` blocks the event loop for as long as it
 * takes, and its time and memory grow with how many arrays and objects a body holds, not with its bytes: a mebibyte of
 * `[[[[...` took 270 ms and 16 MiB (the proxy's limit) 6 s and half a gigabyte, and so deep a value then overflowed the
 * stack of `JSON.stringify` (the proxy answered 500). The bytes are scanned first (a string without escapes skipped with
 * `indexOf`), so a body nested deeper than `MAX_JSON_DEPTH` or holding more than `MAX_JSON_ITEMS` items costs a scan up
 * to its limit.
 * Malformed JSON passes: `JSON.parse` refuses it.
 */
export function jsonShapeProblem(bytes: Uint8Array): string | undefined {
  const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let depth = 0;
  let items = 0;
  let inString = false;
  let nextBackslash = -2;
  for (let at = 0; at < body.length; at += 1) {
    const byte = body[at];
    if (inString) {
      if (byte === BACKSLASH) at += 1;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      // A string without a backslash is skipped in one step (a long one, an image's base64, costs no loop turns).
      const end = body.indexOf(QUOTE, at + 1);
      if (nextBackslash !== -1 && nextBackslash < at) nextBackslash = body.indexOf(BACKSLASH, at);
      if (end >= 0 && (nextBackslash === -1 || nextBackslash > end)) at = end;
      else inString = true;
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      depth += 1;
      items += 1;
      if (depth > MAX_JSON_DEPTH) return `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) depth -= 1;
    else if (byte === COMMA) items += 1;
    if (items > MAX_JSON_ITEMS) {
      return `the body holds more than ${MAX_JSON_ITEMS} arrays, objects and list items; send it in several requests`;
    }
  }
  return undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
