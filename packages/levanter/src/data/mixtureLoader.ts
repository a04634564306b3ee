// Weighted mixtures of token sources: which source each row of a step's batch reads, and which
// window of it — a pure function of (seed, step), so seekable and the same for any number of ranks.
import { LevanterError } from "../errors.ts";
import type { TokenSource } from "../sharding/tokenSource.ts";
import { fmix32, splitSeed } from "./feistelPermutation.ts";
import { TokenLoader, type TokenBatch } from "./tokenLoader.ts";

/** One source of a {@link MixtureLoader}. */
export interface MixtureSource {
  name: string;
  source: TokenSource;
  /** Relative weight (≥ 0) before any `weightsAt` stage. */
  weight: number;
}

/** From `step` on, these weights (by source name; a source not named weighs 0). */
export interface MixtureStage {
  step: number;
  weights: Record<string, number>;
}

/** A step's batch of a mixture: `sourceOf[r]` is the index of the source row `r` was read from. */
export interface MixtureBatch extends TokenBatch {
  sourceOf: number[];
}

const TWO_32 = 2 ** 32;

// A 32-bit integer hash of (a, b, c): the three words folded, then murmur3's finalizer.
function hash3(a: number, b: number, c: number): number {
  return fmix32(Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x7f4a7c15, 0xc2b2ae35) ^ Math.imul(c + 0x165667b1, 0x27d4eb2f));
}

/**
 * Batches drawn from several token sources in proportion to their weights, which may change at
 * given steps (`stages`).
 *
 * Step `s` splits its `batchSize` rows among the sources by systematic sampling: with cumulative
 * normalised weights `C_k` and an offset `u_s ∈ [0, 1)` hashed from `(seed, s)`, row `j` belongs
 * to the first source with `(j + u_s) / batchSize < C_k`. So each source gets `⌊B·w_k⌋` or
 * `⌈B·w_k⌉` rows in every step, `B·w_k` on average: realised proportions stay within one row per
 * step of the weights. The `n`-th row ever given to source `k` reads window `n` of that source's
 * own seeded, epoch-wise permutation (as {@link TokenLoader} does for one source), where `n` counts
 * the rows source `k` received in earlier steps (a running sum, recomputed from step 0 only on a
 * backwards seek) plus the row's place among this step's.
 *
 * The batch of a step depends only on (seed, step, batchSize, seqLen, weights, data): a resume
 * reads the same batches as an uninterrupted run, and every data-parallel rank sees the same
 * global batch (the trainer slices it into micro-batches per rank).
 */
export class MixtureLoader {
  readonly seqLen: number;
  readonly batchSize: number;
  readonly seed: number;
  readonly names: readonly string[];
  readonly #loaders: TokenLoader[];
  /** `[fromStep, cumulative normalised weights]`, by step. */
  readonly #stages: { step: number; cumulative: number[] }[];
  /** Rows each source received in steps `[0, #countedTo)`. */
  #counted: number[];
  #countedTo = 0;

  constructor(sources: MixtureSource[], options: { seqLen: number; batchSize: number; seed: number; shuffle?: boolean; stages?: MixtureStage[] }) {
    const { seqLen, batchSize, seed } = options;
    if (sources.length === 0) throw new LevanterError("INVALID_CONFIG", "data.mixture.sources: expected at least one source");
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new LevanterError("INVALID_CONFIG", `batchSize: expected a positive integer, got ${batchSize}`);
    const [lo, hi] = splitSeed(seed);
    const names = sources.map((s) => s.name);
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup !== undefined) throw new LevanterError("INVALID_CONFIG", `data.mixture.sources: the name ${JSON.stringify(dup)} appears twice`);
    this.seqLen = seqLen;
    this.batchSize = batchSize;
    this.seed = seed;
    this.names = names;
    // Each source its own permutation: the seed's low word, the source's index in the high one.
    this.#loaders = sources.map(
      (s, k) => new TokenLoader(s.source, { seqLen, batchSize: 1, seed: lo + TWO_32 * ((hi * 1_000_003 + k + 1) % 2 ** 20), shuffle: options.shuffle ?? true }),
    );
    const base = Object.fromEntries(sources.map((s) => [s.name, s.weight]));
    const stages = [...(options.stages ?? [])];
    for (const [i, st] of stages.entries()) {
      if (!Number.isSafeInteger(st.step) || st.step < 0)
        throw new LevanterError("INVALID_CONFIG", `data.mixture.weightsAt.${i}.step: expected a non-negative integer, got ${st.step}`);
      if (i > 0 && st.step <= stages[i - 1]!.step)
        throw new LevanterError("INVALID_CONFIG", `data.mixture.weightsAt.${i}.step: steps must increase (${stages[i - 1]!.step}, then ${st.step})`);
      for (const n of Object.keys(st.weights)) {
        if (!names.includes(n))
          throw new LevanterError("INVALID_CONFIG", `data.mixture.weightsAt.${i}.weights: no source is named ${JSON.stringify(n)} (sources: ${names.join(", ")})`);
      }
    }
    const all = [{ step: 0, weights: base, what: "data.mixture.sources" }, ...stages.map((st, i) => ({ ...st, what: `data.mixture.weightsAt.${i}` }))];
    this.#stages = all
      .filter((st, i) => !(i === 0 && stages[0]?.step === 0))
      .map((st) => {
        const w = names.map((n) => st.weights[n] ?? 0);
        if (w.some((x) => !Number.isFinite(x) || x < 0)) throw new LevanterError("INVALID_CONFIG", `${st.what}: weights must be finite and ≥ 0, got ${JSON.stringify(w)}`);
        const total = w.reduce((a, b) => a + b, 0);
        if (!(total > 0)) throw new LevanterError("INVALID_CONFIG", `${st.what}: the weights sum to 0; at least one source needs a positive weight`);
        let acc = 0;
        const cumulative = w.map((x) => (acc += x / total));
        cumulative[cumulative.length - 1] = 1;
        return { step: st.step, cumulative };
      });
    this.#counted = names.map(() => 0);
  }

  /** Normalised weights in force at `step`. */
  weightsAt(step: number): number[] {
    const c = this.#stageAt(step).cumulative;
    return c.map((x, k) => x - (k > 0 ? c[k - 1]! : 0));
  }

  /** How many rows of `step`'s batch each source gets. */
  rowCounts(step: number): number[] {
    const B = this.batchSize;
    const u = hash3(this.seed % TWO_32, Math.floor(this.seed / TWO_32), step) / TWO_32;
    const edges = this.#stageAt(step).cumulative.map((c) => Math.min(B, Math.max(0, Math.ceil(B * c - u))));
    edges[edges.length - 1] = B;
    return edges.map((e, k) => e - (k > 0 ? edges[k - 1]! : 0));
  }

  /** The global batch of `step` (every rank gets the same; rows grouped by source). */
  batch(step: number): MixtureBatch {
    if (!Number.isSafeInteger(step) || step < 0) throw new LevanterError("DATA", `step: expected a non-negative integer, got ${step}`);
    const before = this.#rowsBefore(step);
    const counts = this.rowCounts(step);
    const { seqLen, batchSize } = this;
    const inputs = new Int32Array(batchSize * seqLen);
    const targets = new Int32Array(batchSize * seqLen);
    const windows: number[] = [];
    const sourceOf: number[] = [];
    let row = 0;
    for (const [k, count] of counts.entries()) {
      const loader = this.#loaders[k]!;
      for (let i = 0; i < count; i++, row++) {
        const w = loader.windowOf(before[k]! + i);
        windows.push(w);
        sourceOf.push(k);
        const tokens = loader.source.read(w * seqLen, seqLen + 1);
        inputs.set(tokens.subarray(0, seqLen), row * seqLen);
        targets.set(tokens.subarray(1), row * seqLen);
      }
    }
    return { step, size: batchSize, seqLen, inputs, targets, windows, sourceOf };
  }

  #stageAt(step: number): { step: number; cumulative: number[] } {
    let i = this.#stages.length - 1;
    while (i > 0 && this.#stages[i]!.step > step) i--;
    return this.#stages[i]!;
  }

  // Rows each source received in steps [0, step): a running sum, from 0 again on a backwards seek.
  #rowsBefore(step: number): number[] {
    if (step < this.#countedTo) {
      this.#counted = this.names.map(() => 0);
      this.#countedTo = 0;
    }
    for (; this.#countedTo < step; this.#countedTo++) {
      const c = this.rowCounts(this.#countedTo);
      for (let k = 0; k < c.length; k++) this.#counted[k] = this.#counted[k]! + c[k]!;
    }
    return [...this.#counted];
  }
}
