// The training data loader: seeded, resumable windows cut from a token stream.
import { LevanterError } from "../errors.ts";
import { batchSlice } from "../sharding/dataParallel.ts";
import type { TokenSource } from "../sharding/tokenSource.ts";
import { FeistelPermutation, splitSeed } from "./feistelPermutation.ts";

/** How a {@link TokenLoader} cuts and orders the token stream. */
export interface TokenLoaderOptions {
  /** Tokens per training sequence; each window holds `seqLen + 1` tokens (inputs + shifted targets). */
  seqLen: number;
  /** The GLOBAL batch size (sequences per step, summed over all data-parallel ranks). */
  batchSize: number;
  /** Keys the permutation of every epoch. */
  seed: number;
  /** Permute windows (default true); false reads them in order. */
  shuffle?: boolean;
  /** This process's data-parallel rank (default 0) and the number of ranks (default 1). */
  rank?: number;
  world?: number;
}

/** One rank's share of a step's batch; row-major `[size, seqLen]` arrays. */
export interface TokenBatch {
  step: number;
  /** Rows in this batch (this rank's slice of the global batch). */
  size: number;
  seqLen: number;
  /** `inputs[r * seqLen + t]` = token t of row r. */
  inputs: Int32Array;
  /** `targets[r * seqLen + t]` = the token after `inputs[r * seqLen + t]`. */
  targets: Int32Array;
  /** Which windows the rows are (window w covers tokens `[w·seqLen, w·seqLen + seqLen]`). */
  windows: number[];
}

/** Number of `seqLen + 1`-token windows (each starting `seqLen` after the last) in `numTokens`. */
export function countWindows(numTokens: number, seqLen: number): number {
  return numTokens < 1 ? 0 : Math.floor((numTokens - 1) / seqLen);
}

/**
 * A deterministic, seekable training-data loader. Window `w` is tokens `[w·seqLen, (w+1)·seqLen]`
 * (consecutive windows share one token, so every token after the first is a target exactly once
 * per epoch). Global sample `g = step·batchSize + j` is window `perm_e(g mod W)` of epoch
 * `e = ⌊g / W⌋`, where `perm_e` is a {@link FeistelPermutation} keyed by `(seed, e)`.
 *
 * So the batch of step n depends only on (seed, n, batchSize, seqLen, data): resuming at any
 * step needs no replay, and rank r of `world` gets rows `[r·B/world, (r+1)·B/world)` of the same
 * global batch, whatever the number of ranks. The loader keeps no position of its own: the trainer
 * checkpoints the step.
 *
 * @example
 * const loader = new TokenLoader(await TokenCacheReader.open(dir), { seqLen: 64, batchSize: 16, seed: 0 });
 * const { inputs, targets } = loader.batch(step);
 */
export class TokenLoader {
  readonly source: TokenSource;
  readonly seqLen: number;
  readonly batchSize: number;
  readonly seed: number;
  readonly shuffle: boolean;
  readonly rank: number;
  readonly world: number;
  /** Windows per epoch. */
  readonly numWindows: number;
  readonly #slice: { start: number; size: number };
  #epochPerm: { epoch: number; perm: FeistelPermutation } | undefined;

  constructor(source: TokenSource, options: TokenLoaderOptions) {
    const { seqLen, batchSize, seed } = options;
    if (!Number.isInteger(seqLen) || seqLen < 1) {
      throw new LevanterError("INVALID_CONFIG", `seqLen: expected a positive integer, got ${seqLen}`);
    }
    splitSeed(seed);
    this.#slice = batchSlice(options.rank ?? 0, options.world ?? 1, batchSize);
    this.source = source;
    this.seqLen = seqLen;
    this.batchSize = batchSize;
    this.seed = seed;
    this.shuffle = options.shuffle ?? true;
    this.rank = options.rank ?? 0;
    this.world = options.world ?? 1;
    this.numWindows = countWindows(source.numTokens, seqLen);
    if (this.numWindows < 1) {
      throw new LevanterError("DATA", `the data holds ${source.numTokens} tokens: not one window of seqLen + 1 = ${seqLen + 1}`);
    }
  }

  /** Global batches per epoch (a batch may straddle two epochs). */
  get stepsPerEpoch(): number {
    return this.numWindows / this.batchSize;
  }

  /** The window that global sample `g` (= step·batchSize + row) reads. */
  windowOf(g: number): number {
    if (!Number.isSafeInteger(g) || g < 0) throw new LevanterError("DATA", `sample index ${g}: expected a non-negative integer`);
    const epoch = Math.floor(g / this.numWindows);
    const i = g - epoch * this.numWindows;
    return this.shuffle ? this.#permutation(epoch).apply(i) : i;
  }

  /** This rank's slice of the global batch of `step`. */
  batch(step: number): TokenBatch {
    if (!Number.isSafeInteger(step) || step < 0) throw new LevanterError("DATA", `step: expected a non-negative integer, got ${step}`);
    const { start, size } = this.#slice;
    const { seqLen } = this;
    const inputs = new Int32Array(size * seqLen);
    const targets = new Int32Array(size * seqLen);
    const windows: number[] = [];
    for (let row = 0; row < size; row++) {
      const w = this.windowOf(step * this.batchSize + start + row);
      windows.push(w);
      const tokens = this.source.read(w * seqLen, seqLen + 1);
      inputs.set(tokens.subarray(0, seqLen), row * seqLen);
      targets.set(tokens.subarray(1), row * seqLen);
    }
    return { step, size, seqLen, inputs, targets, windows };
  }

  /** Batches of `from`, `from + 1`, … (endless: epochs wrap). */
  *batchesFrom(from = 0): IterableIterator<TokenBatch> {
    for (let step = from; ; step++) yield this.batch(step);
  }

  #permutation(epoch: number): FeistelPermutation {
    if (this.#epochPerm?.epoch !== epoch) {
      this.#epochPerm = { epoch, perm: new FeistelPermutation(this.numWindows, this.seed, { tweak: epoch }) };
    }
    return this.#epochPerm.perm;
  }
}

/**
 * Evaluation batches over a validation token source: windows in order, no permutation, one pass.
 * Batch `i` holds windows `[i·B, (i+1)·B)` (the last batch may be short); rank r of `world` gets
 * its contiguous share of each batch's rows (possibly none in a short last batch).
 */
export class ValidationBatches {
  readonly source: TokenSource;
  readonly seqLen: number;
  readonly batchSize: number;
  readonly rank: number;
  readonly world: number;
  readonly numWindows: number;

  constructor(source: TokenSource, options: { seqLen: number; batchSize: number; rank?: number; world?: number; maxWindows?: number }) {
    const { seqLen } = options;
    if (!Number.isInteger(seqLen) || seqLen < 1) {
      throw new LevanterError("INVALID_CONFIG", `seqLen: expected a positive integer, got ${seqLen}`);
    }
    batchSlice(options.rank ?? 0, options.world ?? 1, options.batchSize);
    this.source = source;
    this.seqLen = seqLen;
    this.batchSize = options.batchSize;
    this.rank = options.rank ?? 0;
    this.world = options.world ?? 1;
    const all = countWindows(source.numTokens, seqLen);
    this.numWindows = options.maxWindows === undefined ? all : Math.min(all, options.maxWindows);
  }

  /** Number of (global) batches in one pass. */
  get numBatches(): number {
    return Math.ceil(this.numWindows / this.batchSize);
  }

  /** This rank's rows of evaluation batch `index`. */
  batch(index: number): TokenBatch {
    if (!Number.isInteger(index) || index < 0 || index >= this.numBatches) {
      throw new LevanterError("DATA", `validation batch ${index} is outside [0, ${this.numBatches})`);
    }
    const first = index * this.batchSize;
    const total = Math.min(this.batchSize, this.numWindows - first);
    const per = this.batchSize / this.world;
    const start = Math.min(total, this.rank * per);
    const size = Math.min(total, start + per) - start;
    const { seqLen } = this;
    const inputs = new Int32Array(size * seqLen);
    const targets = new Int32Array(size * seqLen);
    const windows: number[] = [];
    for (let row = 0; row < size; row++) {
      const w = first + start + row;
      windows.push(w);
      const tokens = this.source.read(w * seqLen, seqLen + 1);
      inputs.set(tokens.subarray(0, seqLen), row * seqLen);
      targets.set(tokens.subarray(1), row * seqLen);
    }
    return { step: index, size, seqLen, inputs, targets, windows };
  }

  /** Every batch of one pass, in order. */
  *[Symbol.iterator](): IterableIterator<TokenBatch> {
    for (let i = 0; i < this.numBatches; i++) yield this.batch(i);
  }
}
