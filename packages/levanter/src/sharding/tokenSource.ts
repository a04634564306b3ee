// Random-access token streams: the interface the loader reads, over a cache or an array.
import { LevanterError } from "../errors.ts";

/**
 * A flat, random-access stream of token ids: what the data loader cuts into training windows.
 * {@link TokenCacheReader} implements it over a token cache on disk, {@link ArrayTokenSource} over
 * an in-memory array. Reads are synchronous so that the loader is a pure function of the step.
 */
export interface TokenSource {
  /** Total number of tokens in the stream. */
  readonly numTokens: number;
  /** The `length` tokens starting at token position `start` (must lie inside the stream). */
  read(start: number, length: number): Int32Array;
}

/** A {@link TokenSource} over token ids held in memory (tests, small corpora, generated data). */
export class ArrayTokenSource implements TokenSource {
  readonly numTokens: number;
  readonly #tokens: Int32Array;

  constructor(tokens: ArrayLike<number>) {
    this.#tokens = tokens instanceof Int32Array ? tokens : Int32Array.from(tokens);
    this.numTokens = this.#tokens.length;
  }

  read(start: number, length: number): Int32Array {
    checkRange(start, length, this.numTokens);
    return this.#tokens.slice(start, start + length);
  }
}

/** Throws a DATA error unless `[start, start + length)` lies inside `[0, numTokens)`. */
export function checkRange(start: number, length: number, numTokens: number): void {
  if (!Number.isInteger(start) || !Number.isInteger(length) || start < 0 || length < 0 || start + length > numTokens) {
    throw new LevanterError("DATA", `token range [${start}, ${start + length}) is outside the stream of ${numTokens} tokens`);
  }
}
