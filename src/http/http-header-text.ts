import { isUtf8 } from 'node:buffer';
import { ErrorCode, MnemeError } from '../core/errors.js';

/**
 * A request header's value as the UTF-8 text its bytes spell. Node reads a header's bytes as Latin-1, so
 * `Mneme-User: zoë` sent as UTF-8 (as curl sends it) arrived as "zoÃ«", the id of another user; bytes that are not
 * UTF-8 are refused (INVALID_INPUT) rather than read as some other text.
 */
export function headerText(value: string, header: string): string {
  // Within ASCII, the Latin-1 reading and the UTF-8 one agree.
  if (!/[\u0080-\uffff]/.test(value)) return value;
  const bytes = Buffer.from(value, 'latin1');
  if (/[\u0100-\uffff]/.test(value) || !isUtf8(bytes)) {
    throw new MnemeError(ErrorCode.InvalidInput, `the ${header} header is not UTF-8 text: send its value as UTF-8`);
  }
  return bytes.toString('utf8');
}
