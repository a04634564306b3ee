// MinHash signatures over word n-grams and LSH band keys: plain functions over typed arrays, with
// no zephyr imports (the Dataset operation `dedupFuzzy` wires them into stages).

/** Lower-cased words of `text`, split on whitespace. */
export function words(text: string): string[] {
  const out = text.toLowerCase().split(/\s+/);
  if (out.length > 0 && out[0] === "") out.shift();
  if (out.length > 0 && out[out.length - 1] === "") out.pop();
  return out;
}

/** FNV-1a over the UTF-16 code units of `s` (32 bits). */
export function hashWord(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Murmur3's 32-bit finaliser (a bijection on 32-bit integers). */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Scratch buffers of {@link shingleHashesInto} (grown as needed, reused across records). */
let wordBuf = new Uint32Array(256);
let shingleBuf = new Uint32Array(256);

/**
 * The word hashes of `text` into `wordBuf` (its count returned): FNV-1a of each lower-cased word,
 * computed straight from the character codes, with no word strings. Texts with a non-ASCII
 * character take the `words()` path (full Unicode lower-casing and whitespace).
 */
function wordHashes(text: string): number {
  let n = 0;
  let h = 0x811c9dc5;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c >= 128) return wordHashesSlow(text);
    if (c === 32 || (c >= 9 && c <= 13)) {
      if (inWord) {
        if (n === wordBuf.length) growWords();
        wordBuf[n++] = h >>> 0;
        h = 0x811c9dc5;
        inWord = false;
      }
      continue;
    }
    if (c >= 65 && c <= 90) c += 32;
    h = Math.imul(h ^ c, 0x01000193);
    inWord = true;
  }
  if (inWord) {
    if (n === wordBuf.length) growWords();
    wordBuf[n++] = h >>> 0;
  }
  return n;
}

function growWords(): void {
  const next = new Uint32Array(wordBuf.length * 2);
  next.set(wordBuf);
  wordBuf = next;
}

function wordHashesSlow(text: string): number {
  const ws = words(text);
  if (ws.length > wordBuf.length) wordBuf = new Uint32Array(ws.length);
  for (let i = 0; i < ws.length; i++) wordBuf[i] = hashWord(ws[i]);
  return ws.length;
}

/**
 * The shingle hashes of `text` (as {@link shingleHashes}) into a scratch buffer reused by the next
 * call: the buffer and the count of hashes in it.
 */
export function shingleHashesInto(text: string, n: number): { hashes: Uint32Array; count: number } {
  const nw = wordHashes(text);
  if (nw === 0) return { hashes: shingleBuf, count: 0 };
  const wh = wordBuf;
  const count = Math.max(1, nw - n + 1);
  const span = Math.min(n, nw);
  if (count > shingleBuf.length) shingleBuf = new Uint32Array(Math.max(count, shingleBuf.length * 2));
  const out = shingleBuf;
  for (let i = 0; i < count; i++) {
    let h = span;
    for (let j = 0; j < span; j++) h = Math.imul(h ^ wh[i + j], 0x9e3779b1) + j;
    out[i] = fmix32(h);
  }
  return { hashes: out, count };
}

/**
 * The 32-bit hashes of the word `n`-grams of `text` (a text shorter than `n` words is one
 * shingle of all its words; a text without words has none). Duplicates are kept.
 */
export function shingleHashes(text: string, n: number): Uint32Array {
  const { hashes, count } = shingleHashesInto(text, n);
  return hashes.slice(0, count);
}

/** The set of word `n`-grams of `text` as strings (for exact Jaccard checks). */
export function shingleSet(text: string, n: number): Set<string> {
  const ws = words(text);
  const out = new Set<string>();
  if (ws.length === 0) return out;
  const count = Math.max(1, ws.length - n + 1);
  const span = Math.min(n, ws.length);
  for (let i = 0; i < count; i++) out.add(ws.slice(i, i + span).join(" "));
  return out;
}

/** Exact Jaccard similarity of two sets (1 for two empty sets). */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let inter = 0;
  for (const x of small) if (large.has(x)) inter++;
  return inter / (a.size + b.size - inter);
}

/** A small seeded generator (splitmix32) for the permutation parameters. */
function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** `permutations` hash functions h_i(x) = mix((a_i·x + b_i) mod 2^32), a_i odd, drawn from `seed`. */
export interface Permutations {
  readonly a: Int32Array;
  readonly b: Int32Array;
}

export function makePermutations(permutations: number, seed: number): Permutations {
  const next = splitmix32(seed);
  const a = new Int32Array(permutations);
  const b = new Int32Array(permutations);
  for (let i = 0; i < permutations; i++) {
    a[i] = next() | 1;
    b[i] = next() | 0;
  }
  return { a, b };
}

/**
 * The MinHash signature of a set of shingle hashes, each value stored XOR 0x80000000 as an int32
 * (so that signed comparison orders the unsigned hashes and the loop stays in int32 arithmetic);
 * all 0x7fffffff for an empty set.
 */
export function minhash(shingles: Uint32Array, perms: Permutations, out: Int32Array = new Int32Array(perms.a.length), count: number = shingles.length): Int32Array {
  const { a, b } = perms;
  const k = a.length;
  // Permutation-major: the running minimum stays in a register over the shingles.
  for (let i = 0; i < k; i++) {
    const ai = a[i];
    const bi = b[i];
    let m = 0x7fffffff;
    for (let s = 0; s < count; s++) {
      let v = (Math.imul(ai, shingles[s] | 0) + bi) | 0;
      v = Math.imul(v ^ (v >>> 15), 0x2c1b3c6d);
      v = (v ^ (v >>> 12) ^ 0x80000000) | 0;
      if (v < m) m = v;
    }
    out[i] = m;
  }
  return out;
}

/**
 * The band keys of a signature: band `j` covers rows `j·rows … j·rows+rows-1`; its key is a
 * 53-bit hash of the band's index and values (equal keys: equal bands, up to 2^-53 collisions).
 */
export function bandKeys(sig: Int32Array, bands: number, rows: number, out: number[] = new Array<number>(bands)): number[] {
  for (let j = 0; j < bands; j++) {
    let h1 = Math.imul(j + 1, 0x9e3779b1);
    let h2 = Math.imul(j + 1, 0x85ebca77) ^ 0x27d4eb2f;
    for (let r = j * rows, e = r + rows; r < e; r++) {
      const v = sig[r];
      h1 = Math.imul(h1 ^ v, 0x01000193);
      h2 = Math.imul(h2 ^ v, 0xc2b2ae35) + 0x165667b1;
    }
    out[j] = (fmix32(h1) >>> 11) * 4294967296 + fmix32(h2);
  }
  return out;
}

function integrate(f: (s: number) => number, a: number, b: number): number {
  const steps = 200;
  const h = (b - a) / steps;
  let acc = 0;
  for (let i = 0; i < steps; i++) acc += f(a + (i + 0.5) * h);
  return acc * h;
}

/**
 * LSH bands and rows for a Jaccard `threshold` with `permutations` hash functions: the (b, r),
 * b·r ≤ permutations, that minimise the sum of the false-positive area (pairs below the threshold
 * that share a band) and the false-negative area (pairs above it that share none).
 */
export function lshParams(threshold: number, permutations: number): { bands: number; rows: number } {
  let best = { bands: 1, rows: permutations, cost: Infinity };
  for (let rows = 1; rows <= permutations; rows++) {
    const bands = Math.floor(permutations / rows);
    const p = (s: number): number => 1 - (1 - s ** rows) ** bands;
    const cost = integrate(p, 0, threshold) + integrate((s) => 1 - p(s), threshold, 1);
    if (cost < best.cost) best = { bands, rows, cost };
  }
  return { bands: best.bands, rows: best.rows };
}
