import { isUtf8 } from 'node:buffer';
import { Transform } from 'node:stream';

/**
 * The lines of a byte stream that are UTF-8, each with its newline, as they arrive; a line that is not is left out and
 * handed to `refused` (its number, from 1). A newline byte never occurs inside a UTF-8 sequence, so lines are split
 * on the bytes before any decoding: no line is decoded with replacement characters for bytes it does not hold.
 */
export function utf8Lines(refused: (line: number) => void): Transform {
  let pending: Buffer = Buffer.alloc(0);
  let number = 0;
  const pass = (stream: Transform, line: Buffer) => {
    number += 1;
    if (isUtf8(line)) stream.push(line);
    else refused(number);
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      let rest = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      for (let end = rest.indexOf(0x0a); end >= 0; end = rest.indexOf(0x0a)) {
        pass(this, rest.subarray(0, end + 1));
        rest = rest.subarray(end + 1);
      }
      pending = Buffer.from(rest);
      done();
    },
    flush(done) {
      if (pending.length > 0) pass(this, pending);
      done();
    },
  });
}
