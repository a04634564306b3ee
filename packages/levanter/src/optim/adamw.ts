// AdamW with decoupled weight decay, a decay mask and global-norm clipping; its state round-trips bitwise.
import { tf } from "../tf.ts";
import { LevanterError } from "../errors.ts";
import { ADAMW_KERNEL, nativeSumSquares, type AdamWAttrs } from "../kernels/native/adamw.ts";
import { activeNativeAddon } from "../kernels/native/register.ts";

// The native kernels' addon while the native backend is active (its kernels live on wasm).
const nativeAddon = () => (tf.getBackend() === "wasm" ? activeNativeAddon() : undefined);

/** Settings of {@link AdamW} (the optimizer section minus the schedule). */
export interface AdamWOptions {
  beta1: number;
  beta2: number;
  epsilon: number;
  weightDecay: number;
  /** Global-norm clipping threshold; 0 disables. */
  maxGradNorm: number;
  /** Whether a parameter (by name) is decayed. */
  decayMask: (name: string) => boolean;
  /**
   * ZeRO-1: the parameters (by name) whose moments this optimizer keeps and updates; the others
   * are another rank's (default: all). {@link AdamW.apply} then takes gradients of these alone.
   */
  owned?: ReadonlySet<string>;
}

/** AdamW's scalar state, kept in float64 and stored as JSON so a restore is bit-exact. */
export interface AdamWScalars {
  step: number;
  /** β1^step and β2^step, accumulated by multiplication exactly as training does. */
  beta1Power: number;
  beta2Power: number;
}

/**
 * AdamW (decoupled weight decay) with global-norm clipping, on tf variables it owns. All of its
 * state — moments and the bias-correction accumulators — is exported by {@link AdamW.state} and
 * restored bit-for-bit by {@link AdamW.load} (tfjs' built-in Adam recomputes its accumulators on
 * restore, which changes later losses in the 8th digit).
 */
export class AdamW {
  readonly options: AdamWOptions;
  private readonly params: Map<string, tf.Variable>;
  private readonly m = new Map<string, tf.Variable>();
  private readonly v = new Map<string, tf.Variable>();
  private scalars: AdamWScalars = { step: 0, beta1Power: 1, beta2Power: 1 };

  constructor(params: Map<string, tf.Variable>, options: AdamWOptions) {
    this.params = params;
    this.options = options;
    for (const name of options.owned ?? []) {
      if (!params.has(name)) throw new LevanterError("INTERNAL", `AdamW: owned parameter ${name} is not a parameter`);
    }
    for (const [name, p] of params) {
      if (options.owned && !options.owned.has(name)) continue;
      this.m.set(
        name,
        tf.tidy(() => tf.variable(tf.zerosLike(p), false)),
      );
      this.v.set(
        name,
        tf.tidy(() => tf.variable(tf.zerosLike(p), false)),
      );
    }
  }

  /** Steps taken so far. */
  get step(): number {
    return this.scalars.step;
  }

  /** The global L2 norm of `grads` (by name, same shapes as the parameters). */
  globalNorm(grads: Map<string, tf.Tensor>): number {
    return this.normFromTerms(this.normTerms(grads, [...this.params.keys()]));
  }

  /**
   * The terms of the global norm, Σ g² of each gradient of `names` (by name): float64 from the
   * native kernel, else float32 values from tfjs. A data-parallel gang with sharded ownership
   * computes each term where the tensor lives and {@link AdamW.normFromTerms} combines them.
   */
  normTerms(grads: Map<string, tf.Tensor>, names: readonly string[]): number[] {
    const addon = nativeAddon();
    return names.map((n) => {
      const g = grads.get(n);
      if (!g) {
        const hint = this.options.owned && !this.options.owned.has(n) ? ` (${n} is another rank's: a sharded optimizer's norm comes from ShardedOptimizerState.globalNorm)` : "";
        throw new LevanterError("INTERNAL", `no gradient for parameter ${n}${hint}`);
      }
      return addon ? nativeSumSquares(addon, g) : tf.tidy(() => g.square().sum().dataSync()[0]!);
    });
  }

  /** The global norm from every parameter's term, in parameter order: the same bits wherever the terms were computed. */
  normFromTerms(terms: readonly number[]): number {
    if (terms.length !== this.params.size) throw new LevanterError("INTERNAL", `AdamW: ${terms.length} norm terms for ${this.params.size} parameters`);
    if (nativeAddon()) {
      // Summed in float64 in parameter order.
      let total = 0;
      for (const t of terms) total += t;
      return Math.sqrt(total);
    }
    return tf.tidy(
      () =>
        tf
          .addN(terms.map((t) => tf.scalar(t, "float32")))
          .sqrt()
          .dataSync()[0]!,
    );
  }

  /**
   * Clips `grads` (by name, same shapes as the parameters) to the global norm, applies one AdamW
   * update with learning rate `lr`, and returns the global gradient norm before clipping. Pass
   * `gradNorm` when the caller already computed it with {@link AdamW.globalNorm}.
   */
  apply(grads: Map<string, tf.Tensor>, lr: number, gradNorm = this.globalNorm(grads)): number {
    const { beta1: b1, beta2: b2, epsilon, weightDecay, maxGradNorm, decayMask } = this.options;
    const b1p = this.scalars.beta1Power * b1;
    const b2p = this.scalars.beta2Power * b2;
    const clip = maxGradNorm > 0 && gradNorm > maxGradNorm ? maxGradNorm / gradNorm : 1;
    if (nativeAddon()) {
      // The same float32 operations in one fused native pass per parameter.
      tf.tidy(() => {
        for (const [name, m] of this.m) {
          const p = this.params.get(name)!;
          const v = this.v.get(name)!;
          const attrs: AdamWAttrs = { clip, beta1: b1, beta2: b2, bc1: 1 - b1p, bc2: 1 - b2p, epsilon, weightDecay: weightDecay > 0 && decayMask(name) ? weightDecay : 0, lr };
          const [p1, m1, v1] = tf.engine().runKernel(ADAMW_KERNEL, { p, g: grads.get(name)!, m, v }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor[];
          m.assign(m1!);
          v.assign(v1!);
          p.assign(p1!);
        }
      });
      this.scalars = { step: this.scalars.step + 1, beta1Power: b1p, beta2Power: b2p };
      return gradNorm;
    }
    tf.tidy(() => {
      for (const [name, m] of this.m) {
        const p = this.params.get(name)!;
        let g = grads.get(name)!;
        if (clip !== 1) g = g.mul(clip);
        const v = this.v.get(name)!;
        const m1 = m.mul(b1).add(g.mul(1 - b1));
        const v1 = v.mul(b2).add(g.square().mul(1 - b2));
        m.assign(m1);
        v.assign(v1);
        let update = m1.div(1 - b1p).div(
          v1
            .div(1 - b2p)
            .sqrt()
            .add(epsilon),
        );
        if (weightDecay > 0 && decayMask(name)) update = update.add(p.mul(weightDecay));
        p.assign(p.sub(update.mul(lr)));
      }
    });
    this.scalars = { step: this.scalars.step + 1, beta1Power: b1p, beta2Power: b2p };
    return gradNorm;
  }

  /**
   * The whole state: moments by `<param>/adam_m|adam_v` and the scalars (JSON-safe). With
   * `owned`, the other ranks' moments come from `others` (by the same keys).
   */
  state(others?: ReadonlyMap<string, Float32Array>): { arrays: Map<string, Float32Array>; scalars: AdamWScalars } {
    const own = this.ownMoments();
    const arrays = new Map<string, Float32Array>();
    for (const kind of ["adam_m", "adam_v"] as const) {
      for (const name of this.params.keys()) {
        const key = `${name}/${kind}`;
        const a = own.get(key) ?? others?.get(key);
        if (!a) throw new LevanterError("INTERNAL", `AdamW.state: no ${key} (another rank's, and not gathered)`);
        arrays.set(key, a);
      }
    }
    return { arrays, scalars: { ...this.scalars } };
  }

  /** The moments this optimizer keeps (with `owned`: this rank's), keyed as {@link AdamW.state} keys them. */
  ownMoments(): Map<string, Float32Array> {
    const out = new Map<string, Float32Array>();
    for (const [name, m] of this.m) out.set(`${name}/adam_m`, m.dataSync() as Float32Array);
    for (const [name, v] of this.v) out.set(`${name}/adam_v`, v.dataSync() as Float32Array);
    return out;
  }

  /** Restores a state produced by {@link AdamW.state}, bit for bit (with `owned`: those moments; all must be present). */
  load(arrays: Map<string, Float32Array>, scalars: AdamWScalars): void {
    for (const kind of ["adam_m", "adam_v"] as const) {
      const slots = kind === "adam_m" ? this.m : this.v;
      for (const [name, p] of this.params) {
        const a = arrays.get(`${name}/${kind}`);
        if (!a || a.length !== p.size) {
          throw new LevanterError("CHECKPOINT_CORRUPT", `optimizer state ${name}/${kind}: missing or wrong size`);
        }
        const slot = slots.get(name);
        if (slot) tf.tidy(() => slot.assign(tf.tensor(a, slot.shape, "float32")));
      }
    }
    this.scalars = { ...scalars };
  }

  /** Frees the moment variables. */
  dispose(): void {
    for (const t of [...this.m.values(), ...this.v.values()]) t.dispose();
  }
}
