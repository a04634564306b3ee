// The engine's forward pass: one batched step over ragged rows (decode tokens and prompt chunks of many sequences) against preallocated KV buffers.
import { tf } from "../tf.ts";
import { nativeActive } from "../kernels/native/register.ts";
import { nativeGelu } from "../kernels/native/gelu.ts";
import { attentionShape, type AttentionShape, type ResolvedModelConfig } from "../models/modelConfig.ts";
import type { TransformerLm } from "../models/transformer.ts";
import type { KvLayout, SeqKv } from "./kvPool.ts";
import { NativeDecodeStep } from "./nativeDecode.ts";
import { PackedGemm, type PackedWeight, type WeightSource } from "./packedGemm.ts";

/** One token of one sequence in a {@link BatchDecoder.step}. */
export interface DecodeRow {
  /** The sequence's cache; the row's keys and values are written at `pos`. */
  kv: SeqKv;
  token: number;
  /** Absolute position (the row attends to positions `0..pos` of `kv`). */
  pos: number;
  /** Whether the step returns this row's next-token logits. */
  logits: boolean;
}

/** Options of a {@link BatchDecoder}. */
export interface BatchDecoderOptions {
  /**
   * Where a step runs: `native` (default where levanter's native addon loads) — the whole step in
   * one addon call (native/src/decode.cc); `packed` (the default without the addon) — projections
   * on matmul.wat on weights packed once, the rest in JS; `tfjs` — one tf.matMul per projection
   * (the fallback where WebAssembly SIMD is unavailable). `native` falls back to `packed` where the
   * addon is unavailable.
   */
  projections?: "native" | "packed" | "tfjs";
}

interface Linear {
  kernel: tf.Tensor2D;
  packed?: PackedWeight;
  /** The bias as values (JS-side projections) and as the model's tensor (tfjs chains). */
  bias?: Float32Array;
  biasTensor?: tf.Tensor;
}

interface Norm {
  scale: Float32Array;
  bias?: Float32Array;
}

interface Layer {
  attnNorm: Norm;
  qkv: Linear;
  out: Linear;
  mlpNorm: Norm;
  gate?: Linear;
  up: Linear;
  down: Linear;
}

/**
 * Runs a {@link TransformerLm}'s inference forward for a batch of rows of any sequences at any
 * positions. Where levanter's native addon loads, a step is one addon call
 * ({@link NativeDecodeStep}: the whole forward in C++ on weights copied once). Otherwise the
 * projections are one rank-2 product each over all rows (matmul.wat on weights packed once, see
 * {@link PackedGemm}; or tf.matMul), and everything else — norms, rotary positions, attention over
 * each sequence's preallocated KV buffer, activations, residuals — runs in JS on Float32Arrays.
 * A step runs no tfjs op at all (native, packed) or 3 per projection (tfjs), whatever the batch;
 * rows of a sequence written in one step see each other causally (prompt chunks), and a row's
 * values do not depend on the other rows. The values are the model's (same formulas); the model is
 * only read.
 */
export class BatchDecoder {
  readonly config: ResolvedModelConfig;
  /** The KV buffers' shape: `nHeads` there is the model's key/value heads. */
  readonly layout: KvLayout;
  private readonly attn: AttentionShape;
  private readonly tokEmbed: Float32Array;
  private readonly posEmbed: Float32Array | undefined;
  private readonly layers: Layer[];
  private readonly finalNorm: Norm;
  private readonly head: Linear;
  /** The tied head's `[D, V]` transpose (owned here; the untied head is the model's). */
  private readonly ownedHead: tf.Tensor2D | undefined;
  private readonly rope: { cos: Float32Array; sin: Float32Array } | undefined;
  private readonly gemm: PackedGemm | undefined;
  private readonly native: NativeDecodeStep | undefined;
  /** Where a step runs (see {@link BatchDecoderOptions}). */
  readonly projections: "native" | "packed" | "tfjs";

  constructor(model: TransformerLm, opts: BatchDecoderOptions = {}) {
    const cfg = model.config;
    this.config = cfg;
    this.attn = attentionShape(cfg);
    this.layout = { nLayers: cfg.nLayers, nHeads: this.attn.nKvHeads, headDim: this.attn.headDim };
    const p = (name: string): tf.Variable => {
      const v = model.params.get(name);
      if (!v) throw new Error(`internal: no parameter ${name}`);
      return v;
    };
    const js = (name: string): Float32Array => p(name).dataSync() as Float32Array;
    const opt = (name: string): Float32Array | undefined => (model.params.has(name) ? js(name) : undefined);
    const linear = (prefix: string): Linear => {
      const bias = cfg.useBias ? opt(`${prefix}/bias`) : undefined;
      return { kernel: p(`${prefix}/kernel`) as unknown as tf.Tensor2D, ...(bias ? { bias, biasTensor: p(`${prefix}/bias`) } : {}) };
    };
    const norm = (prefix: string): Norm => {
      const bias = cfg.norm === "layer" ? opt(`${prefix}/bias`) : undefined;
      return { scale: js(`${prefix}/scale`), ...(bias ? { bias } : {}) };
    };
    this.tokEmbed = js("embed/tokens");
    this.posEmbed = cfg.positions === "learned" ? js("embed/positions") : undefined;
    this.layers = Array.from({ length: cfg.nLayers }, (_, i) => ({
      attnNorm: norm(`layers/${i}/attn_norm`),
      qkv: linear(`layers/${i}/attn/qkv`),
      out: linear(`layers/${i}/attn/out`),
      mlpNorm: norm(`layers/${i}/mlp_norm`),
      ...(cfg.activation === "swiglu" ? { gate: linear(`layers/${i}/mlp/gate`) } : {}),
      up: linear(`layers/${i}/mlp/up`),
      down: linear(`layers/${i}/mlp/down`),
    }));
    this.finalNorm = norm("final_norm");
    if (cfg.tieEmbeddings) {
      this.ownedHead = tf.tidy(() => p("embed/tokens").transpose() as tf.Tensor2D);
      this.head = { kernel: this.ownedHead };
    } else {
      this.ownedHead = undefined;
      this.head = linear("head");
    }
    this.rope = cfg.positions === "rope" ? ropeTables(cfg) : undefined;
    this.native = opts.projections === undefined || opts.projections === "native" ? this.createNative() : undefined;
    if (this.native) {
      this.gemm = undefined;
      this.projections = "native";
      return;
    }
    const linears = [...this.layers.flatMap((l) => [l.qkv, l.out, ...(l.gate ? [l.gate] : []), l.up, l.down]), this.head];
    const made =
      opts.projections === "tfjs"
        ? undefined
        : PackedGemm.create(
            linears.map((lin): WeightSource => {
              const [k, n] = lin.kernel.shape;
              // The tied head is embed/tokens [V, D] read transposed.
              if (lin === this.head && cfg.tieEmbeddings) return { values: this.tokEmbed, k, n, sbk: 1, sbj: k };
              return { values: lin.kernel.dataSync() as Float32Array, k, n, sbk: n, sbj: 1 };
            }),
          );
    this.gemm = made?.gemm;
    this.projections = made ? "packed" : "tfjs";
    if (made) linears.forEach((lin, i) => (lin.packed = made.packed[i]!));
  }

  /**
   * Writes every row's keys and values into its sequence's buffer and returns the next-token
   * logits `[rows with logits, V]` (in row order). Each `kv.length` becomes at least `pos + 1`.
   */
  step(rows: DecodeRow[]): Float32Array {
    const { dModel: d, vocabSize: v } = this.config;
    const n = rows.length;
    for (const r of rows) {
      if (!(r.pos >= 0 && r.pos < r.kv.capacity)) throw new Error(`internal: position ${r.pos} outside a KV buffer of ${r.kv.capacity}`);
    }
    if (this.native) {
      let nWant = 0;
      for (const r of rows) if (r.logits) nWant++;
      const want = new Int32Array(nWant);
      for (let i = 0, k = 0; i < n; i++) if (rows[i]!.logits) want[k++] = i;
      const logits = this.native.step(rows, want);
      for (const r of rows) if (r.kv.length < r.pos + 1) r.kv.length = r.pos + 1;
      return logits;
    }
    const x = new Float32Array(n * d);
    rows.forEach((r, i) => {
      const te = r.token * d;
      for (let j = 0; j < d; j++) x[i * d + j] = this.tokEmbed[te + j]!;
      if (this.posEmbed) for (let j = 0; j < d; j++) x[i * d + j]! += this.posEmbed[r.pos * d + j]!;
    });
    this.layers.forEach((layer, l) => {
      const qkv = this.linear(layer.qkv, this.norm(layer.attnNorm, x, n), n);
      const att = this.attend(l, qkv, rows);
      addInto(x, this.linear(layer.out, att, n));
      addInto(x, this.mlp(layer, this.norm(layer.mlpNorm, x, n), n));
    });
    for (const r of rows) if (r.kv.length < r.pos + 1) r.kv.length = r.pos + 1;
    const want = rows.flatMap((r, i) => (r.logits ? [i] : []));
    if (want.length === 0) return new Float32Array(0);
    const hx = new Float32Array(want.length * d);
    want.forEach((i, k) => hx.set(x.subarray(i * d, (i + 1) * d), k * d));
    const logits = this.linear(this.head, this.norm(this.finalNorm, hx, want.length), want.length);
    if (logits.length !== want.length * v) throw new Error("internal: head output shape");
    return logits;
  }

  // The native step's weights: the same values as the JS paths read, kernels row-major [k, n].
  private createNative(): NativeDecodeStep | undefined {
    const cfg = this.config;
    const vals = (t: tf.Tensor) => t.dataSync() as Float32Array;
    const lin = (l: Linear) => ({ w: vals(l.kernel), ...(l.bias ? { b: l.bias } : {}) });
    const nm = (x: Norm) => ({ s: x.scale, ...(x.bias ? { b: x.bias } : {}) });
    // The tied head's kernel is embed/tokens transposed ([D, V]), like the untied one.
    return NativeDecodeStep.create({
      config: cfg,
      ffn: this.layers[0]!.up.kernel.shape[1],
      tok: this.tokEmbed,
      ...(this.posEmbed ? { pos: this.posEmbed } : {}),
      ...(this.rope ? { rope: this.rope } : {}),
      layers: this.layers.map((l) => ({
        attnNorm: nm(l.attnNorm),
        qkv: lin(l.qkv),
        out: lin(l.out),
        mlpNorm: nm(l.mlpNorm),
        ...(l.gate ? { gate: lin(l.gate) } : {}),
        up: lin(l.up),
        down: lin(l.down),
      })),
      finalNorm: nm(this.finalNorm),
      head: lin(this.head),
    });
  }

  /** Frees what the decoder allocated (not the model), the native step's copy of the weights included. */
  dispose(): void {
    this.ownedHead?.dispose();
    this.native?.dispose();
  }

  // `x [n, din] · kernel (+ bias)`: one upload, one matMul, one read back.
  private linear(lin: Linear, x: Float32Array, n: number): Float32Array {
    const [din, dout] = lin.kernel.shape;
    const y = this.gemm && lin.packed ? this.gemm.run(lin.packed, x, n) : readBack(() => tf.matMul(tf.tensor2d(x, [n, din]), lin.kernel));
    if (lin.bias) for (let i = 0; i < n; i++) for (let j = 0; j < dout; j++) y[i * dout + j]! += lin.bias[j]!;
    return y;
  }

  // The MLP on normed rows `h [n, D]` as one tfjs chain (the model's own activation ops, vectorised
  // by the backend): one upload, one read back.
  private mlp(layer: Layer, h: Float32Array, n: number): Float32Array {
    if (this.gemm) {
      // Packed projections: the activation in JS (float64, the model's formulas).
      const up = this.linear(layer.up, h, n);
      if (layer.gate) {
        const g = this.linear(layer.gate, h, n);
        for (let i = 0; i < up.length; i++) up[i] = (g[i]! / (1 + Math.exp(-g[i]!))) * up[i]!;
      } else {
        for (let i = 0; i < up.length; i++) {
          const z = up[i]!;
          up[i] = z / (1 + Math.exp(-GELU_C2 * (z + 0.044715 * z * z * z)));
        }
      }
      return this.linear(layer.down, up, n);
    }
    const lin = (l: Linear, t: tf.Tensor2D): tf.Tensor2D => {
      const y: tf.Tensor2D = tf.matMul(t, l.kernel);
      return l.biasTensor ? (y.add(l.biasTensor) as tf.Tensor2D) : y;
    };
    return readBack(() => {
      const ht = tf.tensor2d(h, [n, this.config.dModel]);
      const up = lin(layer.up, ht);
      if (layer.gate) {
        const g = lin(layer.gate, ht);
        return lin(layer.down, g.mul(tf.sigmoid(g)).mul(up) as tf.Tensor2D);
      }
      return lin(layer.down, nativeActive() ? (nativeGelu(up) as tf.Tensor2D) : gelu(up));
    });
  }

  private norm(nm: Norm, x: Float32Array, n: number): Float32Array {
    const d = this.config.dModel;
    const eps = this.config.normEps;
    const rms = this.config.norm === "rms";
    const y = new Float32Array(n * d);
    for (let i = 0; i < n; i++) {
      const o = i * d;
      let mean = 0;
      if (!rms) {
        for (let j = 0; j < d; j++) mean += x[o + j]!;
        mean /= d;
      }
      let sq = 0;
      for (let j = 0; j < d; j++) {
        const c = x[o + j]! - mean;
        sq += c * c;
      }
      const inv = 1 / Math.sqrt(sq / d + eps);
      for (let j = 0; j < d; j++) y[o + j] = (x[o + j]! - mean) * inv * nm.scale[j]! + (nm.bias ? nm.bias[j]! : 0);
    }
    return y;
  }

  // Writes each row's k, v into its buffer (all rows first, so a prompt chunk's rows see each
  // other), then attends each row's query to positions 0..pos of its sequence. Returns [n, D].
  private attend(l: number, qkv: Float32Array, rows: DecodeRow[]): Float32Array {
    const { nHeads: nh, nKvHeads: nkv, headDim: dh } = this.attn;
    // Query head h reads key/value head ⌊h / g⌋ (grouped-query attention; g = 1 otherwise).
    const g = nh / nkv;
    const d = nh * dh; // the queries' (and the attention output's) width
    const kvd = nkv * dh;
    const n = rows.length;
    const q = new Float32Array(n * d);
    rows.forEach((r, i) => {
      const o = i * (d + 2 * kvd);
      q.set(qkv.subarray(o, o + d), i * d);
      const k = qkv.slice(o + d, o + d + kvd);
      if (this.rope) {
        this.rotate(q, i * d, r.pos, nh);
        this.rotate(k, 0, r.pos, nkv);
      }
      for (let h = 0; h < nkv; h++) {
        r.kv.data.set(k.subarray(h * dh, (h + 1) * dh), r.kv.offset(this.layout, l, 0, h) + r.pos * dh);
        r.kv.data.set(qkv.subarray(o + d + kvd + h * dh, o + d + kvd + (h + 1) * dh), r.kv.offset(this.layout, l, 1, h) + r.pos * dh);
      }
    });
    const out = new Float32Array(n * d);
    const scale = 1 / Math.sqrt(dh);
    // With packed projections, each sequence's rows attend through two matmul.wat products per
    // head (3–4× the speed of the JS loop below at long contexts; each output sums in order, so a
    // row's values do not depend on the other rows); with tfjs projections, row by row in JS.
    const groups = new Map<SeqKv, number[]>();
    rows.forEach((r, i) => {
      const g = groups.get(r.kv);
      if (g) g.push(i);
      else groups.set(r.kv, [i]);
    });
    const single: number[] = [];
    for (const [kv, idx] of groups) {
      if (this.gemm) this.attendGroup(l, kv, idx, rows, q, out);
      else single.push(...idx);
    }
    let scores = new Float64Array(0);
    const acc = new Float32Array(dh);
    single.forEach((i) => {
      const r = rows[i]!;
      const len = r.pos + 1;
      if (scores.length < len) scores = new Float64Array(Math.max(len, 2 * scores.length));
      const buf = r.kv.data;
      for (let h = 0; h < nh; h++) {
        const qo = i * d + h * dh;
        const ko = r.kv.offset(this.layout, l, 0, Math.floor(h / g));
        const vo = r.kv.offset(this.layout, l, 1, Math.floor(h / g));
        let max = -Infinity;
        for (let t = 0; t < len; t++) {
          const s = dot(q, qo, buf, ko + t * dh, dh) * scale;
          scores[t] = s;
          if (s > max) max = s;
        }
        let total = 0;
        acc.fill(0);
        for (let t = 0; t < len; t++) {
          const w = Math.exp(scores[t]! - max);
          total += w;
          axpy(acc, w, buf, vo + t * dh, dh);
        }
        for (let j = 0; j < dh; j++) out[qo + j] = acc[j]! / total;
      }
    });
    return out;
  }

  // Attention of one sequence's rows `idx` (queries in `q`) on matmul.wat: per head, scores
  // Q·Kᵀ over positions 0..max pos, a causal softmax per row in JS, then P·V into `out`.
  private attendGroup(l: number, kv: SeqKv, idx: number[], rows: DecodeRow[], q: Float32Array, out: Float32Array): void {
    const { nHeads: nh, nKvHeads: nkv, headDim: dh } = this.attn;
    const d = nh * dh;
    const m = idx.length;
    const len = Math.max(...idx.map((i) => rows[i]!.pos)) + 1;
    const scale = 1 / Math.sqrt(dh);
    const qh = new Float32Array(m * dh);
    const p = new Float32Array(m * len);
    for (let h = 0; h < nh; h++) {
      idx.forEach((i, r) => qh.set(q.subarray(i * d + h * dh, i * d + (h + 1) * dh), r * dh));
      const ko = kv.offset(this.layout, l, 0, Math.floor((h * nkv) / nh));
      const vo = kv.offset(this.layout, l, 1, Math.floor((h * nkv) / nh));
      // Kᵀ[j, t] = K[t·dh + j]: sbk 1, sbj dh.
      const sc = this.gemm!.product(qh, m, kv.data.subarray(ko, ko + len * dh), dh, len, 1, dh);
      p.fill(0);
      idx.forEach((i, r) => {
        const upto = rows[i]!.pos + 1;
        const o = r * len;
        let max = -Infinity;
        for (let t = 0; t < upto; t++) if (sc[o + t]! * scale > max) max = sc[o + t]! * scale;
        let total = 0;
        for (let t = 0; t < upto; t++) total += p[o + t] = Math.exp(sc[o + t]! * scale - max);
        for (let t = 0; t < upto; t++) p[o + t]! /= total;
      });
      const att = this.gemm!.product(p, m, kv.data.subarray(vo, vo + len * dh), len, dh, dh, 1);
      idx.forEach((i, r) => out.set(att.subarray(r * dh, (r + 1) * dh), i * d + h * dh));
    }
  }

  // Rotate-half RoPE in place on the nh·headDim values at `x[o..]` for position `pos`.
  private rotate(x: Float32Array, o: number, pos: number, nh: number): void {
    const dh = this.attn.headDim;
    const half = dh / 2;
    const { cos, sin } = this.rope!;
    for (let h = 0; h < nh; h++) {
      const b = o + h * dh;
      for (let j = 0; j < half; j++) {
        const c = cos[pos * half + j]!;
        const s = sin[pos * half + j]!;
        const x1 = x[b + j]!;
        const x2 = x[b + j + half]!;
        x[b + j] = x1 * c - x2 * s;
        x[b + j + half] = x2 * c + x1 * s;
      }
    }
  }
}

// Runs `f` in a tidy and returns its result's values (read back once; every tensor freed).
function readBack(f: () => tf.Tensor): Float32Array {
  const t = tf.tidy(f);
  try {
    return t.dataSync() as Float32Array;
  } finally {
    t.dispose();
  }
}

function addInto(x: Float32Array, y: Float32Array): void {
  for (let i = 0; i < x.length; i++) x[i]! += y[i]!;
}

// a[ao..ao+n) · b[bo..bo+n), four partial sums (twice as fast in V8 as one).
function dot(a: Float32Array, ao: number, b: Float32Array, bo: number, n: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    s0 += a[ao + j]! * b[bo + j]!;
    s1 += a[ao + j + 1]! * b[bo + j + 1]!;
    s2 += a[ao + j + 2]! * b[bo + j + 2]!;
    s3 += a[ao + j + 3]! * b[bo + j + 3]!;
  }
  for (; j < n; j++) s0 += a[ao + j]! * b[bo + j]!;
  return s0 + s1 + (s2 + s3);
}

// acc[0..n) += w · b[bo..bo+n).
function axpy(acc: Float32Array, w: number, b: Float32Array, bo: number, n: number): void {
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    acc[j]! += w * b[bo + j]!;
    acc[j + 1]! += w * b[bo + j + 1]!;
    acc[j + 2]! += w * b[bo + j + 2]!;
    acc[j + 3]! += w * b[bo + j + 3]!;
  }
  for (; j < n; j++) acc[j]! += w * b[bo + j]!;
}

// GPT-2's tanh GELU as the model computes it: x·sigmoid(c2·(x + 0.044715·x³)) (0.5·(1 + tanh u) = sigmoid 2u).
const GELU_C2 = 2 * Math.sqrt(2 / Math.PI);
function gelu(x: tf.Tensor2D): tf.Tensor2D {
  return x.mul(tf.sigmoid(x.add(x.mul(x).mul(x).mul(0.044715)).mul(GELU_C2))) as tf.Tensor2D;
}

// The model's rotary tables (float32, as its tensors hold them), one angle per (position, pair).
function ropeTables(cfg: ResolvedModelConfig): { cos: Float32Array; sin: Float32Array } {
  const dh = attentionShape(cfg).headDim;
  const half = dh / 2;
  const cos = new Float32Array(cfg.seqLen * half);
  const sin = new Float32Array(cfg.seqLen * half);
  for (let p = 0; p < cfg.seqLen; p++) {
    for (let j = 0; j < half; j++) {
      const a = p / Math.pow(cfg.ropeTheta, (2 * j) / dh);
      cos[p * half + j] = Math.cos(a);
      sin[p * half + j] = Math.sin(a);
    }
  }
  return { cos, sin };
}
