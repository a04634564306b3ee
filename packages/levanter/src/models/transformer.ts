// The decoder-only transformer language model: parameters by name, forward pass and loss.
import { tf } from "../tf.ts";
import { nativeActive } from "../kernels/native/register.ts";
import { matMul2d } from "../kernels/wasm/matMul2d.ts";
import { oneHotFloat } from "../kernels/wasm/oneHotFloat.ts";
import { nativeCausalAttention, nativeRotary } from "../kernels/native/attention.ts";
import { nativeSwiglu } from "../kernels/native/swiglu.ts";
import { nativeTokenCrossEntropy } from "../kernels/native/crossEntropy.ts";
import { nativeGelu } from "../kernels/native/gelu.ts";
import { nativeNorm } from "../kernels/native/norm.ts";
import { Rng } from "../rng.ts";
import { attentionShape, type AttentionShape, type ResolvedModelConfig } from "./modelConfig.ts";

/** A sequence's attention keys and values per layer (`[nKvHeads, length, headDim]` each), for cached decoding. */
export interface KvCache {
  keys: tf.Tensor3D[];
  values: tf.Tensor3D[];
  /** Tokens cached (= the position of the next token). */
  length: number;
}

/** Parameters by name (`layers/0/attn/qkv/kernel`, …), in a stable creation order. */
export type NamedParams = Map<string, tf.Variable>;

/** Parameter names whose values are not decayed by default: norms, biases, embeddings. */
export function defaultDecayMask(name: string): boolean {
  return !(/(^|\/)(.*_norm)\//.test(name) || name.endsWith("/bias") || name.startsWith("embed/"));
}

/**
 * A decoder-only transformer LM on tfjs core ops: pre-norm blocks (RMS or layer norm), causal
 * multi-head attention, GELU or SwiGLU MLP, learned or rotary positions, tied or untied head.
 * Projections run as rank-2 {@link matMul2d}s on `[B·T, D]` (wasm's fast path).
 */
export class TransformerLm {
  readonly config: ResolvedModelConfig;
  readonly params: NamedParams;
  /** Query heads, key/value heads and head width. */
  readonly attn: AttentionShape;
  private readonly rope: { cos: tf.Tensor2D; sin: tf.Tensor2D } | undefined;
  private readonly causalMask: tf.Tensor2D;

  private constructor(config: ResolvedModelConfig, params: NamedParams) {
    this.config = config;
    this.params = params;
    this.attn = attentionShape(config);
    const t = config.seqLen;
    this.causalMask = tf.tidy(() => {
      const m = new Float32Array(t * t);
      for (let i = 0; i < t; i++) for (let j = i + 1; j < t; j++) m[i * t + j] = -1e9;
      return tf.tensor2d(m, [t, t]);
    });
    this.rope = config.positions === "rope" ? ropeTables(config) : undefined;
  }

  /** Builds a model with fresh parameters drawn from `rng` (identical on every backend for a seed). */
  static init(config: ResolvedModelConfig, rng: Rng): TransformerLm {
    const { vocabSize: v, dModel: d, dFF: f, nLayers: l, seqLen: t, initStd: std } = config;
    const { nHeads: nh, nKvHeads: nkv, headDim: dh } = attentionShape(config);
    const params: NamedParams = new Map();
    const add = (name: string, shape: number[], init: "normal" | "ones" | "zeros", scale = std) => {
      const n = shape.reduce((a, b) => a * b, 1);
      const values = init === "normal" ? rng.normal(n, scale) : new Float32Array(n).fill(init === "ones" ? 1 : 0);
      // tfjs names variables process-wide (a second model would clash), so let it pick the names.
      params.set(
        name,
        tf.tidy(() => tf.variable(tf.tensor(values, shape), true)),
      );
    };
    const norm = (prefix: string) => {
      add(`${prefix}/scale`, [d], "ones");
      if (config.norm === "layer") add(`${prefix}/bias`, [d], "zeros");
    };
    const linear = (prefix: string, din: number, dout: number, scale = std) => {
      add(`${prefix}/kernel`, [din, dout], "normal", scale);
      if (config.useBias) add(`${prefix}/bias`, [dout], "zeros");
    };
    // GPT-2's residual scaling keeps the residual stream's variance flat across depth.
    const residualStd = std / Math.sqrt(2 * l);
    add("embed/tokens", [v, d], "normal");
    if (config.positions === "learned") add("embed/positions", [t, d], "normal");
    for (let i = 0; i < l; i++) {
      norm(`layers/${i}/attn_norm`);
      // Query, key and value projections side by side: [D, (H + 2·Hkv)·dh] (= [D, 3D] by default).
      linear(`layers/${i}/attn/qkv`, d, (nh + 2 * nkv) * dh);
      linear(`layers/${i}/attn/out`, nh * dh, d, residualStd);
      norm(`layers/${i}/mlp_norm`);
      if (config.activation === "swiglu") linear(`layers/${i}/mlp/gate`, d, f);
      linear(`layers/${i}/mlp/up`, d, f);
      linear(`layers/${i}/mlp/down`, f, d, residualStd);
    }
    norm("final_norm");
    if (!config.tieEmbeddings) linear("head", d, v);
    return new TransformerLm(config, params);
  }

  /** Number of scalar parameters. */
  parameterCount(): number {
    let n = 0;
    for (const p of this.params.values()) n += p.size;
    return n;
  }

  private p(name: string): tf.Variable {
    const v = this.params.get(name);
    if (!v) throw new Error(`internal: no parameter ${name}`);
    return v;
  }

  private norm(prefix: string, x: tf.Tensor2D): tf.Tensor2D {
    const eps = this.config.normEps;
    if (nativeActive()) {
      const bias = this.config.norm === "layer" ? this.p(`${prefix}/bias`) : undefined;
      return nativeNorm(x, this.p(`${prefix}/scale`), bias, eps);
    }
    let y: tf.Tensor;
    if (this.config.norm === "rms") {
      y = x.mul(tf.rsqrt(x.square().mean(-1, true).add(eps)));
    } else {
      const xc = x.sub(x.mean(-1, true));
      y = xc.mul(tf.rsqrt(xc.square().mean(-1, true).add(eps)));
    }
    y = mulRow(y as tf.Tensor2D, this.p(`${prefix}/scale`));
    if (this.config.norm === "layer") y = addRow(y as tf.Tensor2D, this.p(`${prefix}/bias`));
    return y as tf.Tensor2D;
  }

  private linear(prefix: string, x: tf.Tensor2D): tf.Tensor2D {
    const y = matMul2d(x, this.p(`${prefix}/kernel`) as tf.Tensor2D);
    return this.config.useBias ? addRow(y, this.p(`${prefix}/bias`)) : y;
  }

  private attention(i: number, h: tf.Tensor2D, b: number, t: number): tf.Tensor2D {
    const { nHeads: nh, nKvHeads: nkv, headDim: dh } = this.attn;
    // On the native backend: one fused kernel each way, from the projection's [B·T, (H + 2·Hkv)·dh]
    // straight to the merged heads (grouped-query included), after one rotary kernel each way
    // where positions are rotary. Other backends take the op-by-op path below.
    if (nativeActive()) {
      let qkv = this.linear(`layers/${i}/attn/qkv`, h);
      if (this.rope) qkv = nativeRotary(qkv, this.rope.cos, this.rope.sin, b, nh, nkv);
      return this.linear(`layers/${i}/attn/out`, nativeCausalAttention(qkv, b, nh, nkv));
    }
    // Rank ≤ 4 transposes only: wasm's 5-D transpose is ~100× slower.
    const qkv = this.linear(`layers/${i}/attn/qkv`, h)
      .reshape([b, t, nh + 2 * nkv, dh])
      .transpose([0, 2, 1, 3]);
    let q: tf.Tensor3D;
    let k: tf.Tensor3D;
    let v: tf.Tensor3D;
    if (nkv === nh) {
      [q, k, v] = tf.split(qkv, 3, 1).map((x) => x.reshape([b * nh, t, dh]) as tf.Tensor3D) as [tf.Tensor3D, tf.Tensor3D, tf.Tensor3D];
      if (this.rope) {
        q = applyRope(q, this.rope, t);
        k = applyRope(k, this.rope, t);
      }
    } else {
      const [q4, k4, v4] = tf.split(qkv, [nh, nkv, nkv], 1) as [tf.Tensor4D, tf.Tensor4D, tf.Tensor4D];
      q = q4.reshape([b * nh, t, dh]);
      k = k4.reshape([b * nkv, t, dh]);
      if (this.rope) {
        q = applyRope(q, this.rope, t);
        k = applyRope(k, this.rope, t);
      }
      k = repeatKv(k, nh / nkv);
      v = repeatKv(v4.reshape([b * nkv, t, dh]), nh / nkv);
    }
    const mask = t === this.config.seqLen ? this.causalMask : this.causalMask.slice([0, 0], [t, t]);
    const scores = tf
      .matMul(q, k.transpose([0, 2, 1]))
      .mul(1 / Math.sqrt(dh))
      .add(mask);
    const att = tf.matMul(tf.softmax(scores, -1), v); // [B·H, T, dh]
    const merged = att
      .reshape([b, nh, t, dh])
      .transpose([0, 2, 1, 3])
      .reshape([b * t, nh * dh]) as tf.Tensor2D;
    return this.linear(`layers/${i}/attn/out`, merged);
  }

  private mlp(i: number, h: tf.Tensor2D): tf.Tensor2D {
    const up = this.linear(`layers/${i}/mlp/up`, h);
    const act =
      this.config.activation === "swiglu"
        ? (() => {
            const g = this.linear(`layers/${i}/mlp/gate`, h);
            // On native: one fused kernel each way.
            if (nativeActive()) return nativeSwiglu(g, up) as tf.Tensor2D;
            return g.mul(tf.sigmoid(g)).mul(up) as tf.Tensor2D;
          })()
        : gelu(up);
    return this.linear(`layers/${i}/mlp/down`, act);
  }

  /** Next-token logits `[B·T, V]` for token ids `[B, T]` (int32, T ≤ seqLen). */
  logits(ids: tf.Tensor2D): tf.Tensor2D {
    const [b, t] = ids.shape;
    const { dModel: d } = this.config;
    let x = tf.gather(this.p("embed/tokens"), ids.reshape([b * t]).toInt()) as tf.Tensor2D;
    if (this.config.positions === "learned") {
      const pos = this.p("embed/positions").slice([0, 0], [t, d]);
      x = x
        .reshape([b, t, d])
        .add(pos)
        .reshape([b * t, d]) as tf.Tensor2D;
    }
    for (let i = 0; i < this.config.nLayers; i++) {
      x = x.add(this.attention(i, this.norm(`layers/${i}/attn_norm`, x), b, t));
      x = x.add(this.mlp(i, this.norm(`layers/${i}/mlp_norm`, x)));
    }
    const h = this.norm("final_norm", x);
    return this.config.tieEmbeddings ? matMul2d(h, this.p("embed/tokens").transpose() as tf.Tensor2D) : this.linear("head", h);
  }

  /**
   * Inference only (training never calls it): runs `ids` of one sequence from position
   * `cache.length` (0 without a cache) and returns their next-token logits `[T, V]` with the cache
   * extended by their keys and values. The caller owns both (dispose the old cache once replaced).
   */
  extend(ids: number[], cache?: KvCache): { logits: tf.Tensor2D; cache: KvCache } {
    const t = ids.length;
    const p = cache?.length ?? 0;
    const { nLayers } = this.config;
    const { nHeads: nh, nKvHeads: nkv, headDim: dh } = this.attn;
    return tf.tidy(() => {
      const positions = Array.from({ length: t }, (_, i) => p + i);
      let x = this.embedAt(ids, positions);
      const keys: tf.Tensor3D[] = [];
      const values: tf.Tensor3D[] = [];
      // Query i (absolute position p+i) sees keys 0..p+i.
      const m = new Float32Array(t * (p + t));
      for (let i = 0; i < t; i++) for (let j = p + i + 1; j < p + t; j++) m[i * (p + t) + j] = -1e9;
      const mask = tf.tensor2d(m, [t, p + t]);
      for (let l = 0; l < nLayers; l++) {
        const h = this.norm(`layers/${l}/attn_norm`, x);
        const qkv = this.linear(`layers/${l}/attn/qkv`, h)
          .reshape([t, nh + 2 * nkv, dh])
          .transpose([1, 0, 2]);
        const [q0, k0, v] = tf.split(qkv, [nh, nkv, nkv], 0) as [tf.Tensor3D, tf.Tensor3D, tf.Tensor3D];
        let q = q0;
        let k = k0;
        if (this.rope) {
          q = this.ropeAt(q, positions);
          k = this.ropeAt(k, positions);
        }
        const kAll = cache ? tf.concat([cache.keys[l]!, k], 1) : k;
        const vAll = cache ? tf.concat([cache.values[l]!, v], 1) : v;
        keys.push(kAll);
        values.push(vAll);
        const scores = tf
          .matMul(q, repeatKv(kAll, nh / nkv).transpose([0, 2, 1]))
          .mul(1 / Math.sqrt(dh))
          .add(mask);
        const att = tf.matMul(tf.softmax(scores, -1), repeatKv(vAll, nh / nkv)); // [H, T, dh]
        const merged = att.transpose([1, 0, 2]).reshape([t, nh * dh]) as tf.Tensor2D;
        x = x.add(this.linear(`layers/${l}/attn/out`, merged));
        x = x.add(this.mlp(l, this.norm(`layers/${l}/mlp_norm`, x)));
      }
      return { logits: this.head(x), cache: { keys, values, length: p + t } };
    });
  }

  /**
   * Inference only: one decode step for a batch of sequences, `tokens[b]` appended to `caches[b]`
   * (sequences of different lengths: keys are padded to the longest and masked). Returns logits
   * `[B, V]` and the extended caches (the caller disposes the old ones).
   */
  decodeStep(tokens: number[], caches: KvCache[]): { logits: tf.Tensor2D; caches: KvCache[] } {
    const b = tokens.length;
    const { nLayers } = this.config;
    const { nHeads: nh, nKvHeads: nkv, headDim: dh } = this.attn;
    const g = nh / nkv;
    const positions = caches.map((c) => c.length);
    const maxLen = Math.max(...positions) + 1;
    // tidy keeps the tensors of the returned object (it walks nested objects and arrays).
    return tf.tidy(() => {
      let x = this.embedAt(tokens, positions);
      const m = new Float32Array(b * nh * maxLen);
      for (let s = 0; s < b; s++) for (let hh = 0; hh < nh; hh++) m.fill(-1e9, (s * nh + hh) * maxLen + positions[s]! + 1, (s * nh + hh + 1) * maxLen);
      const mask = tf.tensor3d(m, [b * nh, 1, maxLen]);
      const out: KvCache[] = caches.map((c) => ({ keys: [], values: [], length: c.length + 1 }));
      for (let l = 0; l < nLayers; l++) {
        const h = this.norm(`layers/${l}/attn_norm`, x);
        const qkv = this.linear(`layers/${l}/attn/qkv`, h).reshape([b, nh + 2 * nkv, dh]);
        const [q0, k0, v] = tf.split(qkv, [nh, nkv, nkv], 1) as [tf.Tensor3D, tf.Tensor3D, tf.Tensor3D]; // [B, H | Hkv, dh]
        let q = q0;
        let k = k0;
        if (this.rope) {
          q = this.ropeAt(q.transpose([1, 0, 2]) as tf.Tensor3D, positions).transpose([1, 0, 2]) as tf.Tensor3D;
          k = this.ropeAt(k.transpose([1, 0, 2]) as tf.Tensor3D, positions).transpose([1, 0, 2]) as tf.Tensor3D;
        }
        const ks = tf.split(k, b, 0);
        const vs = tf.split(v, b, 0);
        const paddedK: tf.Tensor[] = [];
        const paddedV: tf.Tensor[] = [];
        for (let s = 0; s < b; s++) {
          const kS = tf.concat([caches[s]!.keys[l]!, ks[s]!.reshape([nkv, 1, dh])], 1) as tf.Tensor3D;
          const vS = tf.concat([caches[s]!.values[l]!, vs[s]!.reshape([nkv, 1, dh])], 1) as tf.Tensor3D;
          out[s]!.keys.push(kS);
          out[s]!.values.push(vS);
          const pad = maxLen - kS.shape[1];
          paddedK.push(
            repeatKv(
              pad
                ? tf.pad(kS, [
                    [0, 0],
                    [0, pad],
                    [0, 0],
                  ])
                : kS,
              g,
            ),
          );
          paddedV.push(
            repeatKv(
              pad
                ? tf.pad(vS, [
                    [0, 0],
                    [0, pad],
                    [0, 0],
                  ])
                : vS,
              g,
            ),
          );
        }
        const kB = tf.concat(paddedK, 0) as tf.Tensor3D; // [B·H, L, dh]
        const vB = tf.concat(paddedV, 0) as tf.Tensor3D;
        const scores = tf
          .matMul(q.reshape([b * nh, 1, dh]) as tf.Tensor3D, kB.transpose([0, 2, 1]))
          .mul(1 / Math.sqrt(dh))
          .add(mask);
        const att = tf.matMul(tf.softmax(scores, -1), vB); // [B·H, 1, dh]
        x = x.add(this.linear(`layers/${l}/attn/out`, att.reshape([b, nh * dh]) as tf.Tensor2D));
        x = x.add(this.mlp(l, this.norm(`layers/${l}/mlp_norm`, x)));
      }
      return { logits: this.head(x), caches: out } as unknown as tf.TensorContainer;
    }) as unknown as { logits: tf.Tensor2D; caches: KvCache[] };
  }

  private embedAt(ids: number[], positions: number[]): tf.Tensor2D {
    let x = tf.gather(this.p("embed/tokens"), tf.tensor1d(ids, "int32")) as tf.Tensor2D;
    if (this.config.positions === "learned") x = x.add(tf.gather(this.p("embed/positions"), tf.tensor1d(positions, "int32")));
    return x;
  }

  private head(x: tf.Tensor2D): tf.Tensor2D {
    const h = this.norm("final_norm", x);
    return this.config.tieEmbeddings ? matMul2d(h, this.p("embed/tokens").transpose() as tf.Tensor2D) : this.linear("head", h);
  }

  // Rotary positions for x [H, N, dh] whose N rows sit at `positions`.
  private ropeAt(x: tf.Tensor3D, positions: number[]): tf.Tensor3D {
    const [n, t, dh] = x.shape;
    const half = dh / 2;
    const idx = tf.tensor1d(positions, "int32");
    const cos = tf.gather(this.rope!.cos, idx);
    const sin = tf.gather(this.rope!.sin, idx);
    const x1 = x.slice([0, 0, 0], [n, t, half]);
    const x2 = x.slice([0, 0, half], [n, t, half]);
    return x.mul(cos).add(tf.concat([x2.neg(), x1], -1).mul(sin)) as tf.Tensor3D;
  }

  /** Per-position cross-entropy (nats) `[B·T]` of predicting `targets` `[B, T]` from `inputs` `[B, T]`. */
  tokenLosses(inputs: tf.Tensor2D, targets: tf.Tensor2D): tf.Tensor1D {
    // On the native backend: one fused kernel each way (softmax cross-entropy and its gradient).
    if (nativeActive()) return nativeTokenCrossEntropy(this.logits(inputs), targets.reshape([-1]) as tf.Tensor1D);
    // logSoftmax has a fused gradient; logSumExp's runs through max (Equal kernels).
    const logp = tf.logSoftmax(this.logits(inputs), -1);
    return logp
      .mul(oneHotFloat(targets.reshape([-1]), this.config.vocabSize))
      .sum(-1)
      .neg() as tf.Tensor1D;
  }

  /** Mean next-token cross-entropy (nats per token): the training loss. */
  loss(inputs: tf.Tensor2D, targets: tf.Tensor2D): tf.Scalar {
    return this.tokenLosses(inputs, targets).mean() as tf.Scalar;
  }

  /** Frees the parameters and cached tables. */
  dispose(): void {
    for (const p of this.params.values()) p.dispose();
    this.causalMask.dispose();
    this.rope?.cos.dispose();
    this.rope?.sin.dispose();
  }
}

// Sum over the rows of `[N, D]` as a ones-vector matMul: wasm runs it on its fast GEMM, ~10× faster
// than its Sum kernel (these reductions are the bias and norm-scale gradients).
function sumRows(t: tf.Tensor): tf.Tensor {
  const [n, d] = t.shape as [number, number];
  return tf.matMul(tf.ones([1, n]) as tf.Tensor2D, t as tf.Tensor2D).reshape([d]);
}

// `x [N, D] + v [D]` whose `v` gradient is {@link sumRows}.
const addRow = tf.customGrad((x, v) => ({
  value: tf.add(x as tf.Tensor, v as tf.Tensor),
  gradFunc: (dy: tf.Tensor | tf.Tensor[]) => [dy as tf.Tensor, sumRows(dy as tf.Tensor)],
})) as (x: tf.Tensor2D, v: tf.Tensor) => tf.Tensor2D;

// `x [N, D] · v [D]` (elementwise, broadcast over rows) whose `v` gradient is {@link sumRows}.
const mulRow = tf.customGrad((x, v, save) => {
  (save as tf.GradSaveFunc)([x as tf.Tensor, v as tf.Tensor]);
  return {
    value: tf.mul(x as tf.Tensor, v as tf.Tensor),
    gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
      const g = dy as tf.Tensor;
      const [sx, sv] = saved as [tf.Tensor, tf.Tensor];
      return [g.mul(sv), sumRows(g.mul(sx))];
    },
  };
}) as (x: tf.Tensor2D, v: tf.Tensor) => tf.Tensor2D;

// GELU, tanh approximation (GPT-2's), built from ops that have gradients on every backend.
// 0.5·(1 + tanh(u)) = sigmoid(2u): wasm's Tanh kernel is ~6× slower than its Sigmoid, and this
// form also needs fewer elementwise ops (forward and backward).
function gelu(x: tf.Tensor2D): tf.Tensor2D {
  if (nativeActive()) return nativeGelu(x) as tf.Tensor2D; // one fused kernel each way
  const c2 = 2 * Math.sqrt(2 / Math.PI);
  // x·x·x, not pow: wasm's Pow kernel is ~10× slower.
  return x.mul(tf.sigmoid(x.add(x.mul(x).mul(x).mul(0.044715)).mul(c2))) as tf.Tensor2D;
}

// Each of the N/g key/value heads of `x [N/g, T, dh]` (batch-major) repeated for the g query
// heads it serves: query head h reads key/value head ⌊h / g⌋ (Hugging Face's `repeat_kv`).
function repeatKv(x: tf.Tensor3D, g: number): tf.Tensor3D {
  if (g === 1) return x;
  const [n, t, dh] = x.shape;
  return x
    .reshape([n, 1, t * dh])
    .tile([1, g, 1])
    .reshape([n * g, t, dh]) as tf.Tensor3D;
}

function ropeTables(cfg: ResolvedModelConfig): { cos: tf.Tensor2D; sin: tf.Tensor2D } {
  const dh = attentionShape(cfg).headDim;
  const half = dh / 2;
  const cos = new Float32Array(cfg.seqLen * dh);
  const sin = new Float32Array(cfg.seqLen * dh);
  for (let p = 0; p < cfg.seqLen; p++) {
    for (let j = 0; j < half; j++) {
      const a = p / Math.pow(cfg.ropeTheta, (2 * j) / dh);
      cos[p * dh + j] = cos[p * dh + j + half] = Math.cos(a);
      sin[p * dh + j] = sin[p * dh + j + half] = Math.sin(a);
    }
  }
  return { cos: tf.tensor2d(cos, [cfg.seqLen, dh]), sin: tf.tensor2d(sin, [cfg.seqLen, dh]) };
}

// Rotate-half RoPE on [B·H, T, dh] with slice/concat (exact on wasm and cpu).
function applyRope(x: tf.Tensor3D, tables: { cos: tf.Tensor2D; sin: tf.Tensor2D }, t: number): tf.Tensor3D {
  const [n, , dh] = x.shape;
  const half = dh / 2;
  const cos = tables.cos.slice([0, 0], [t, dh]);
  const sin = tables.sin.slice([0, 0], [t, dh]);
  const x1 = x.slice([0, 0, 0], [n, t, half]);
  const x2 = x.slice([0, 0, half], [n, t, half]);
  const rotated = tf.concat([x2.neg(), x1], -1);
  return x.mul(cos).add(rotated.mul(sin)) as tf.Tensor3D;
}
