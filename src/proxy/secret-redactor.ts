/** What stands for the upstream's key where an upstream echoed it. */
export const REDACTED = '[redacted]';

/**
 * Replaces a secret with `[redacted]` in a body that passes in chunks (ADR 18): `push` returns what may be relayed of
 * the bytes so far, holding back only a tail that could be the start of the secret split across two chunks (a
 * stream's events end with a line break, which no secret holds, so no event waits for the next); `end` returns that
 * tail once the body is over. Without a secret the chunks pass as they are.
 */
export interface SecretRedactor {
  push(chunk: Uint8Array): Uint8Array;
  end(): Uint8Array;
}

export function createSecretRedactor(secret: string): SecretRedactor {
  const needle = Buffer.from(secret);
  const replacement = Buffer.from(REDACTED);
  let carry = Buffer.alloc(0);
  return {
    push(chunk) {
      if (needle.length === 0) return chunk;
      const body =
        carry.length > 0
          ? Buffer.concat([carry, chunk])
          : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      const parts: Buffer[] = [];
      let from = 0;
      for (let at = body.indexOf(needle); at >= 0; at = body.indexOf(needle, from)) {
        parts.push(body.subarray(from, at), replacement);
        from = at + needle.length;
      }
      // The longest tail that is the start of the secret: looked for only where the secret's first byte is.
      let tail = body.indexOf(needle[0] as number, Math.max(from, body.length - needle.length + 1));
      while (tail >= 0 && !body.subarray(tail).equals(needle.subarray(0, body.length - tail))) {
        tail = body.indexOf(needle[0] as number, tail + 1);
      }
      const kept = tail < 0 ? body.length : tail;
      carry = Buffer.from(body.subarray(kept));
      // Nothing replaced: the bytes themselves, without a copy (the usual case).
      if (parts.length === 0) return body.subarray(0, kept);
      parts.push(body.subarray(from, kept));
      return Buffer.concat(parts);
    },
    end() {
      const rest = carry;
      carry = Buffer.alloc(0);
      return rest;
    },
  };
}

/** The body with every occurrence of the secret replaced by `[redacted]` (the bytes themselves when there is none). */
export function redacted(bytes: Uint8Array, secret: string): Uint8Array {
  if (!secret) return bytes;
  const redactor = createSecretRedactor(secret);
  const head = redactor.push(bytes);
  const rest = redactor.end();
  return rest.length === 0 ? head : Buffer.concat([head, rest]);
}
