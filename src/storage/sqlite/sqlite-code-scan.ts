/**
 * The scan of linking's first pass (ADR 20, 2026-12-02, session 7): whether a run of sign-bit codes holds one within
 * Hamming distance `bound` of a query, by a small WebAssembly function that counts bits 64 at a time
 * (`i64.popcnt`) where JavaScript counts 32 at a time with shifts and masks (about 3.5 times the CPU a code at
 * 768 bits). The codes, the query and the owners live in one WebAssembly memory; the function's module is
 * written out below byte by byte (no compiler, no dependency). Null where WebAssembly is not available: the
 * caller scans in JavaScript.
 */
export interface CodeScan {
  /** Bytes per code (the codes' 32-bit words, padded to whole 64-bit words). */
  stride: number;
  /** The codes (`stride` bytes each), to be filled by the caller. */
  codes: Uint32Array;
  /** The memory's owners (one per code, in the codes' order), to be filled by the caller. */
  owners: Int32Array;
  /** Sets the query of the next {@link CodeScan.first} calls (its 32-bit words). */
  query(code: Uint32Array): void;
  /**
   * The first of `count` codes from code `from` within Hamming distance `bound` of the query (of the owners
   * `ownerA` or `ownerB`, or of any owner when `ownerA` is -1), as an index from `from`; -1 when none is.
   */
  first(from: number, count: number, bound: number, ownerA: number, ownerB: number): number;
}

/** Bytes before the codes: the query. */
const QUERY_BYTES = 1024;
const PAGE = 65536;

/**
 * older(query, codes, owners, count, stride, bound, ownerA, ownerB) -> i32: the first index below `count` whose code
 * (at `codes + index * stride`) lies within `bound` of the query (at `query`) and whose owner (the i32 at
 * `owners + index * 4`) is `ownerA` or `ownerB` (any when `ownerA` is negative); -1 when none does. The distance
 * is counted a 64-bit word at a time and the code left once it passes the bound.
 */
// biome-ignore format: one instruction a line, with its operands
const OLDER_BODY = [
  // Locals after the 8 parameters: index (8), word offset (9), distance (10), code address (11), owner (12).
  0x01, 0x05, 0x7f,
  0x02, 0x40, // block: none found
  0x03, 0x40, // loop over the codes
  0x20, 8, 0x20, 3, 0x4f, 0x0d, 1, // index >= count: leave
  0x02, 0x40, // block: next code
  0x20, 6, 0x41, 0, 0x48, // ownerA < 0 ?
  0x45, 0x04, 0x40, // if not: check the owner
  0x20, 2, 0x20, 8, 0x41, 2, 0x74, 0x6a, 0x28, 2, 0, 0x22, 12, // owner = load(owners + index << 2)
  0x20, 6, 0x47, // owner != ownerA
  0x20, 12, 0x20, 7, 0x47, // owner != ownerB
  0x71, 0x0d, 1, // both: next code (the if is depth 0, the block depth 1)
  0x0b, // end if
  0x41, 0, 0x21, 10, 0x41, 0, 0x21, 9, // distance = 0, word = 0
  0x20, 1, 0x20, 8, 0x20, 4, 0x6c, 0x6a, 0x21, 11, // code address = codes + index * stride
  0x03, 0x40, // loop over the words
  0x20, 10,
  0x20, 11, 0x20, 9, 0x6a, 0x29, 3, 0, // load64(code + word)
  0x20, 0, 0x20, 9, 0x6a, 0x29, 3, 0, // load64(query + word)
  0x85, 0x7b, 0xa7, 0x6a, 0x22, 10, // distance += popcnt(xor)
  0x20, 5, 0x4b, 0x0d, 1, // distance > bound: next code
  0x20, 9, 0x41, 8, 0x6a, 0x22, 9, 0x20, 4, 0x49, 0x0d, 0, // word += 8; word < stride: again
  0x0b, // end loop over the words
  0x20, 8, 0x0f, // within the bound: return index
  0x0b, // end block: next code
  0x20, 8, 0x41, 1, 0x6a, 0x21, 8, 0x0c, 0, // index++, again
  0x0b, 0x0b,
  0x41, 0x7f, 0x0b, // -1
];

function leb(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  do {
    let byte = rest & 0x7f;
    rest >>>= 7;
    if (rest !== 0) byte |= 0x80;
    out.push(byte);
  } while (rest !== 0);
  return out;
}

function section(id: number, content: number[]): number[] {
  return [id, ...leb(content.length), ...content];
}

function name(text: string): number[] {
  return [text.length, ...Array.from(text, (char) => char.charCodeAt(0))];
}

/** A module of one function (`type`: its parameters and results) that imports memory `m.m` and exports `f`. */
function moduleBytes(parameters: number[], results: number[], body: number[]): Uint8Array {
  // biome-ignore format: the module's header and sections, one a line
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [1, 0x60, parameters.length, ...parameters, results.length, ...results]),
    ...section(2, [1, ...name('m'), ...name('m'), 0x02, 0x00, 0x00]),
    ...section(3, [1, 0]),
    ...section(7, [1, ...name('f'), 0x00, 0]),
    ...section(10, [1, ...leb(body.length), ...body]),
  ]);
}

const I32 = 0x7f;
const F64 = 0x7c;

/** What this file uses of the WebAssembly API (not in the ES2023 library's types). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number }) => { buffer: ArrayBuffer };
}

type Older = (
  query: number,
  codes: number,
  owners: number,
  count: number,
  stride: number,
  bound: number,
  ownerA: number,
  ownerB: number,
) => number;

const compiled = new Map<string, object | null>();

/** The compiled module (once per process), or null where WebAssembly cannot run it. */
function compile(key: string, bytes: () => Uint8Array): { api: WasmApi; module: object } | null {
  const api = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;
  if (!api) return null;
  if (!compiled.has(key)) {
    try {
      compiled.set(key, new api.Module(bytes()));
    } catch {
      compiled.set(key, null);
    }
  }
  const module = compiled.get(key);
  return module ? { api, module } : null;
}

/** An instance of `module` over a new memory of at least `bytes`, or null where it cannot be had (too large). */
function instantiate(api: WasmApi, module: object, bytes: number) {
  try {
    const memory = new api.Memory({ initial: Math.max(1, Math.ceil(bytes / PAGE)) });
    return { memory, f: new api.Instance(module, { m: { m: memory } }).exports.f };
  } catch {
    return null;
  }
}

/**
 * A scan over `count` codes of `words` 32-bit words, or null where WebAssembly cannot run (the caller scans in
 * JavaScript).
 */
export function createCodeScan(count: number, words: number): CodeScan | null {
  if (words < 1 || words * 4 > QUERY_BYTES) return null;
  const wasm = compile('older', () => moduleBytes([I32, I32, I32, I32, I32, I32, I32, I32], [I32], OLDER_BODY));
  if (!wasm) return null;
  const { api, module } = wasm;
  const stride = Math.ceil(words / 2) * 8;
  const ownersAt = QUERY_BYTES + count * stride;
  const made = instantiate(api, module, ownersAt + count * 4);
  if (!made) return null;
  const { memory } = made;
  const older = made.f as Older;
  const query = new Uint32Array(memory.buffer, 0, QUERY_BYTES / 4);
  const codes = new Uint32Array(memory.buffer, QUERY_BYTES, (count * stride) / 4);
  const owners = new Int32Array(memory.buffer, ownersAt, count);
  return {
    stride,
    codes,
    owners,
    query(code) {
      query.fill(0, 0, stride / 4);
      query.set(code.subarray(0, stride / 4));
    },
    first(from, many, bound, ownerA, ownerB) {
      return older(0, QUERY_BYTES + from * stride, ownersAt + from * 4, many, stride, bound, ownerA, ownerB);
    },
  };
}

/**
 * Dot products of one vector with a fixed set of vectors (the lists' centroids), by a WebAssembly function over
 * pairs of float64 (`f64x2`): the same products and the same four running sums, added in the same order, as
 * the JavaScript `dot` of the lists (each product of two float32 is exact in a float64), so the same number to
 * the bit at about a quarter of the CPU.
 */
export interface DotProducts {
  /** Sets the vector of the next {@link DotProducts.dot} calls. */
  query(vector: Float32Array): void;
  /** The dot product of the vector with the set's vector `index`. */
  dot(index: number): number;
}

/**
 * dot(query, values, length) -> f64: sum over i of query[i] * values[i] (float32 each), in four running sums of
 * float64 (i mod 4, the rest added to the first), added first + second + third + fourth.
 */
// biome-ignore format: one instruction a line, with its operands
const DOT_BODY = [
  // Locals after the 3 parameters: index (3), end of the fours (4); two pairs of sums (5, 6); the first sum (7).
  0x03, 0x02, 0x7f, 0x02, 0x7b, 0x01, 0x7c,
  0x20, 2, 0x41, 0x7c, 0x71, 0x21, 4, // fours = length & ~3
  0x02, 0x40, 0x03, 0x40, // the fours
  0x20, 3, 0x20, 4, 0x4f, 0x0d, 1,
  0x20, 5,
  0x20, 0, 0x20, 3, 0x41, 2, 0x74, 0x6a, 0xfd, 0x5d, 0, 0, 0xfd, 0x5f, // query[index, index + 1] as float64
  0x20, 1, 0x20, 3, 0x41, 2, 0x74, 0x6a, 0xfd, 0x5d, 0, 0, 0xfd, 0x5f, // values[index, index + 1]
  0xfd, 0xf2, 0x01, 0xfd, 0xf0, 0x01, 0x21, 5, // first and second sums += their products
  0x20, 6,
  0x20, 0, 0x20, 3, 0x41, 2, 0x74, 0x6a, 0xfd, 0x5d, 0, 8, 0xfd, 0x5f, // query[index + 2, index + 3]
  0x20, 1, 0x20, 3, 0x41, 2, 0x74, 0x6a, 0xfd, 0x5d, 0, 8, 0xfd, 0x5f,
  0xfd, 0xf2, 0x01, 0xfd, 0xf0, 0x01, 0x21, 6, // third and fourth sums
  0x20, 3, 0x41, 4, 0x6a, 0x21, 3, 0x0c, 0,
  0x0b, 0x0b,
  0x20, 5, 0xfd, 0x21, 0, 0x21, 7, // first = lane 0 of the first pair
  0x02, 0x40, 0x03, 0x40, // the rest, into the first sum
  0x20, 3, 0x20, 2, 0x4f, 0x0d, 1,
  0x20, 7,
  0x20, 0, 0x20, 3, 0x41, 2, 0x74, 0x6a, 0x2a, 2, 0, 0xbb,
  0x20, 1, 0x20, 3, 0x41, 2, 0x74, 0x6a, 0x2a, 2, 0, 0xbb,
  0xa2, 0xa0, 0x21, 7,
  0x20, 3, 0x41, 1, 0x6a, 0x21, 3, 0x0c, 0,
  0x0b, 0x0b,
  0x20, 7, 0x20, 5, 0xfd, 0x21, 1, 0xa0, 0x20, 6, 0xfd, 0x21, 0, 0xa0, 0x20, 6, 0xfd, 0x21, 1, 0xa0, // the four, in order
  0x0b,
];

/** The dot products of any vector of `length` floats with the `count` vectors of `values`; null without WebAssembly. */
export function createDotProducts(values: Float32Array, count: number, length: number): DotProducts | null {
  if (length < 1) return null;
  const wasm = compile('dot', () => moduleBytes([I32, I32, I32], [F64], DOT_BODY));
  if (!wasm) return null;
  const { api, module } = wasm;
  const queryBytes = Math.ceil((length * 4) / 16) * 16;
  const made = instantiate(api, module, queryBytes + count * length * 4);
  if (!made) return null;
  const { memory } = made;
  const dot = made.f as (q: number, v: number, n: number) => number;
  const query = new Float32Array(memory.buffer, 0, length);
  new Float32Array(memory.buffer, queryBytes, count * length).set(values.subarray(0, count * length));
  return {
    query(vector) {
      query.set(vector.subarray(0, length));
    },
    dot(index) {
      return dot(0, queryBytes + index * length * 4, length);
    },
  };
}
