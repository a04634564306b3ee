// The TS side of the native decode step (native/src/decode.cc): hands a model's weights to the addon once and runs BatchDecoder steps through it.
import { loadNativeAddon } from "../kernels/native/addon.ts";
import { attentionShape, type ResolvedModelConfig } from "../models/modelConfig.ts";
import type { SeqKv } from "./kvPool.ts";

/** A projection's weights as the native step takes them: `w [k, n]` row-major, `b [n]`. */
export interface NativeLinear {
  w: Float32Array;
  b?: Float32Array;
}

/** A norm's scale and (layer norm) bias. */
export interface NativeNorm {
  s: Float32Array;
  b?: Float32Array;
}

/** One transformer layer's weights. */
export interface NativeLayer {
  attnNorm: NativeNorm;
  qkv: NativeLinear;
  out: NativeLinear;
  mlpNorm: NativeNorm;
  gate?: NativeLinear;
  up: NativeLinear;
  down: NativeLinear;
}

/** Everything {@link NativeDecodeStep.create} copies into the addon. */
export interface NativeModelSpec {
  config: ResolvedModelConfig;
  /** Hidden width of the MLP. */
  ffn: number;
  tok: Float32Array;
  pos?: Float32Array;
  rope?: { cos: Float32Array; sin: Float32Array };
  layers: NativeLayer[];
  finalNorm: NativeNorm;
  /** `[D, V]` (the tied head: embed/tokens transposed). */
  head: NativeLinear;
}

type CreateFn = (spec: object) => unknown;
type StepFn = (model: unknown, tokens: Int32Array, positions: Int32Array, kvs: Float32Array[], want: Int32Array, out: Float32Array) => void;
type FreeFn = (model: unknown) => void;

/**
 * A model's whole forward step in the native addon (one call per step: embeddings, norms,
 * projections, attention over each row's KV buffer, activations, the head), for a batch of rows
 * of any sequences. Each row's values do not depend on the other rows. Undefined from
 * {@link create} where the addon does not load (or predates the decode kernel).
 */
export class NativeDecodeStep {
  private readonly handle: unknown;
  private readonly run: StepFn;
  private readonly free: FreeFn | undefined;
  private readonly vocab: number;

  private constructor(handle: unknown, run: StepFn, free: FreeFn | undefined, vocab: number) {
    this.handle = handle;
    this.run = run;
    this.free = free;
    this.vocab = vocab;
  }

  /**
   * Frees the addon's copy of the weights now (else the garbage collector does, some time after
   * the last reference goes). Idempotent; a step after it throws.
   */
  dispose(): void {
    this.free?.(this.handle);
  }

  /** Copies the weights into the addon; undefined where it is unavailable (LEVANTER_NATIVE=off, not built). */
  static create(spec: NativeModelSpec): NativeDecodeStep | undefined {
    const load = loadNativeAddon();
    if (!load.ok) return undefined;
    const create = load.addon.decodeCreate as CreateFn | undefined;
    const run = load.addon.decodeStep as StepFn | undefined;
    if (typeof create !== "function" || typeof run !== "function") return undefined;
    const c = spec.config;
    const shape = attentionShape(c);
    const handle = create({
      nLayers: c.nLayers,
      dModel: c.dModel,
      nHeads: shape.nHeads,
      nKvHeads: shape.nKvHeads,
      headDim: shape.headDim,
      vocabSize: c.vocabSize,
      seqLen: c.seqLen,
      ffn: spec.ffn,
      rms: c.norm === "rms",
      swiglu: c.activation === "swiglu",
      eps: c.normEps,
      tok: spec.tok,
      pos: spec.pos,
      cos: spec.rope?.cos,
      sin: spec.rope?.sin,
      layers: spec.layers,
      finalNorm: spec.finalNorm,
      head: spec.head,
    });
    const free = load.addon.decodeFree as FreeFn | undefined;
    return new NativeDecodeStep(handle, run, typeof free === "function" ? free : undefined, c.vocabSize);
  }

  /**
   * Writes each row's keys and values at its position in its buffer and returns the logits
   * `[want.length, V]` of the rows `want` (indices into the rows, in order).
   */
  step(rows: { kv: SeqKv; token: number; pos: number }[], want: Int32Array): Float32Array {
    const n = rows.length;
    const tokens = new Int32Array(n);
    const positions = new Int32Array(n);
    const kvs: Float32Array[] = new Array<Float32Array>(n);
    for (let i = 0; i < n; i++) {
      const r = rows[i]!;
      tokens[i] = r.token;
      positions[i] = r.pos;
      kvs[i] = r.kv.data;
    }
    const out = new Float32Array(want.length * this.vocab);
    this.run(this.handle, tokens, positions, kvs, want, out);
    return out;
  }
}
