// A seeded pseudo-random permutation of [0, n) (Feistel network with cycle walking), in O(1) memory.
import { LevanterError } from "../errors.ts";

const TWO_32 = 2 ** 32;

/** murmur3's 32-bit finalizer: a cheap, well-mixed hash of a 32-bit value. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Mixes any number of 32-bit words into one (order-sensitive). */
export function mixKey(...words: number[]): number {
  let h = 0x9e3779b9;
  for (const w of words) h = fmix32((h ^ fmix32(w >>> 0)) + 0x7f4a7c15);
  return h;
}

/** Splits a non-negative safe integer into its low and high 32-bit words. */
export function splitSeed(seed: number, field = "seed"): [number, number] {
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new LevanterError("INVALID_CONFIG", `${field}: expected a non-negative safe integer, got ${seed}`);
  }
  return [seed % TWO_32, Math.floor(seed / TWO_32)];
}

/**
 * A pseudo-random permutation of `[0, n)` keyed by `seed`: `apply(i)` costs O(1) (expected) and
 * needs no table, so shuffling a billion windows costs nothing up front and any index can be looked
 * up directly (instant resume).
 *
 * A balanced Feistel network over the smallest even bit width `2h` with `2^2h ≥ n` is a bijection
 * of `[0, 2^2h)` for any round function; cycle-walking (re-applying it until the value falls below
 * `n`) restricts it to a bijection of `[0, n)`. Since `2^2h < 4n`, a walk takes < 4 rounds on average.
 */
export class FeistelPermutation {
  readonly n: number;
  readonly #halfBits: number;
  readonly #halfSize: number;
  readonly #keys: number[];

  /**
   * `n` up to 2^52; `seed` any non-negative safe integer; `tweak` (e.g. the epoch) selects an
   * independent permutation for the same seed; more `rounds` mix better (default 6).
   */
  constructor(n: number, seed: number, opts: { tweak?: number; rounds?: number } = {}) {
    if (!Number.isSafeInteger(n) || n < 0 || n > 2 ** 52) {
      throw new LevanterError("INVALID_CONFIG", `n: expected an integer in [0, 2^52], got ${n}`);
    }
    const [lo, hi] = splitSeed(seed);
    const [tweakLo, tweakHi] = splitSeed(opts.tweak ?? 0, "tweak");
    const rounds = opts.rounds ?? 6;
    this.n = n;
    let bits = 2;
    while (2 ** bits < n) bits += 2;
    this.#halfBits = bits / 2;
    this.#halfSize = 2 ** this.#halfBits;
    this.#keys = Array.from({ length: rounds }, (_, r) => mixKey(lo, hi, tweakLo, tweakHi, r));
  }

  /** The image of `i` (an integer in `[0, n)`). */
  apply(i: number): number {
    if (!Number.isInteger(i) || i < 0 || i >= this.n) {
      throw new LevanterError("DATA", `permutation index ${i} is outside [0, ${this.n})`);
    }
    let x = i;
    do x = this.#encrypt(x);
    while (x >= this.n);
    return x;
  }

  #encrypt(x: number): number {
    const size = this.#halfSize;
    // halfBits ≤ 26, so each half and every intermediate fits a 32-bit unsigned word.
    let left = Math.floor(x / size);
    let right = x % size;
    for (const key of this.#keys) {
      const f = mixKey(right, key) % size;
      const next = (left ^ f) >>> 0;
      left = right;
      right = next % size;
    }
    return left * size + right;
  }
}
