/** The control characters a terminal acts on rather than shows, but for a line break and a tab. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters it finds.
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * Text for a terminal, as the CLI prints it for people: each control character of stored text (ESC, which starts
 * colour, cursor, title and OSC 8 link sequences; a carriage return, which writes over the line; BEL, backspace, the
 * C1 controls such as CSI) shown as an escape (`\x1b`, `\r`, `\u009b`), so that what was stored is seen, never run
 * by the terminal. Line breaks and tabs stay. `--json` output is JSON, which escapes them itself.
 */
export function terminalText(text: string): string {
  return text.replace(CONTROLS, (character) => {
    const code = character.charCodeAt(0);
    if (character === '\r') return '\\r';
    return code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
