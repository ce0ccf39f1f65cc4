import type { Principal } from '../core/access.js';

/** How many of the largest bodies one key may be sending at once: its share is this many times the byte limit. */
export const BODIES_PER_KEY = 8;

/** The bytes of one request's body, counted against its key's share as they arrive. */
export interface BodyHold {
  /** Counts `bytes` more; false, counting nothing, when the key would then hold more than its share. */
  add(bytes: number): boolean;
  /** Gives back what this body counted (once it is parsed, or refused). */
  release(): void;
}

/** The bytes of request bodies each key is sending, still being read (ADR 33). */
export interface BodyShares {
  /** The bytes its share holds, in bytes; the same for every key. */
  readonly bytesPerKey: number;
  hold(principal: Principal): BodyHold;
}

/**
 * Counts, per key, the bytes of the request bodies being read. A body is read whole before it is parsed, and Node
 * waits minutes for one to arrive (`requestTimeout`, 300 s): without a share, one key that opens connections and
 * sends each body but its last byte made the process hold as many bodies as it opened connections (300 of the API's:
 * 320 MB). A key's share is `BODIES_PER_KEY` of the largest bodies, so its one request always fits.
 */
export function createBodyShares(maxBodyBytes: number): BodyShares {
  const bytesPerKey = BODIES_PER_KEY * maxBodyBytes;
  const held = new Map<string, number>();
  return {
    bytesPerKey,
    hold(principal) {
      const holder = holderOf(principal);
      let mine = 0;
      return {
        add(bytes) {
          const total = (held.get(holder) ?? 0) + bytes;
          if (total > bytesPerKey) return false;
          held.set(holder, total);
          mine += bytes;
          return true;
        },
        release() {
          const left = (held.get(holder) ?? 0) - mine;
          mine = 0;
          if (left > 0) held.set(holder, left);
          else held.delete(holder);
        },
      };
    },
  };
}

/** Who a share belongs to: the key, or (an open service, a principal of no key) the user or administrator it names. */
function holderOf(principal: Principal): string {
  if (principal.keyId !== undefined) return `key:${principal.keyId}`;
  return principal.kind === 'user' ? `user:${principal.userId}` : `admin:${principal.label}`;
}

/**
 * A body's bytes, read whole as they arrive, each chunk counted by `hold` (given back at the end, whatever ends it);
 * what stopped the read when the body grew larger than `maxBytes` or would overfill its key's share.
 */
export async function readBodyBytes(
  stream: ReadableStream<Uint8Array> | null,
  maxBytes: number,
  hold: BodyHold | undefined,
): Promise<Buffer | 'too large' | 'over share'> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (!stream) return Buffer.alloc(0);
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      const stop = size > maxBytes ? 'too large' : hold && !hold.add(value.byteLength) ? 'over share' : undefined;
      if (stop) {
        await reader.cancel();
        return stop;
      }
      chunks.push(value);
    }
  } finally {
    hold?.release();
  }
  return Buffer.concat(chunks);
}
