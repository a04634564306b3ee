// The ZeRO-1 half of a data-parallel step: each rank owns whole tensors (parallel/zero.ts), gets
// only their reduced gradients, computes only their gradient-norm terms and AdamW updates, and
// the updated parameters are all-gathered. Rank 0 gathers the other ranks' Adam moments only when
// it saves. Every per-tensor computation is the one kernel call a single rank makes on the whole
// tensor, and the norm's terms are combined in parameter order, so the bits do not depend on N.
import { tf } from "../tf.ts";
import type { WasmBackendInternals } from "../kernels/native/heap.ts";
import type { TransformerLm } from "../models/transformer.ts";
import type { AdamW } from "../optim/adamw.ts";
import { scratch } from "../parallel/buffers.ts";
import { allGatherFloat64, allGatherShards } from "../parallel/collectives.ts";
import type { Gang } from "../parallel/gang.ts";
import { tensorShards, type ShardPlan } from "../parallel/zero.ts";

/** A rank's view of ZeRO-1 sharding over a model's parameters (in the model's order). */
export class ShardedOptimizerState {
  readonly plan: ShardPlan;
  readonly #gang: Gang;
  readonly #names: string[];
  readonly #vars: tf.Variable[];
  readonly #offsets: number[];
  readonly #length: number;
  /** The rank that owns each tensor. */
  readonly #owner: number[];

  constructor(model: TransformerLm, gang: Gang) {
    this.#gang = gang;
    this.#names = [...model.params.keys()];
    this.#vars = [...model.params.values()];
    let at = 0;
    this.#offsets = this.#vars.map((v) => ((at += v.size), at - v.size));
    this.#length = at;
    this.plan = tensorShards(
      this.#vars.map((v) => v.size),
      gang.world,
    );
    this.#owner = this.plan.tensors.flatMap(([a, b], r) => Array.from({ length: b - a }, () => r));
  }

  /** The parameters this rank owns, by name. */
  ownedNames(): Set<string> {
    const [a, b] = this.plan.tensors[this.#gang.rank]!;
    return new Set(this.#names.slice(a, b));
  }

  /** The global gradient norm: this rank's terms (its own tensors), gathered, combined in parameter order. */
  async globalNorm(optimizer: AdamW, grads: Map<string, tf.Tensor>): Promise<number> {
    const [a, b] = this.plan.tensors[this.#gang.rank]!;
    const terms = new Float64Array(this.#names.length);
    terms.set(optimizer.normTerms(grads, this.#names.slice(a, b)), a);
    const all = await allGatherFloat64(this.#gang, terms);
    const combined = this.#owner.map((r, t) => all[r]![t]!);
    return optimizer.normFromTerms(combined);
  }

  /** After this rank updated its own tensors: every rank gets every parameter's new values. */
  async gatherParams(): Promise<void> {
    const flat = scratch(this.#gang, "params", Float32Array, this.#length);
    const [a, b] = this.plan.tensors[this.#gang.rank]!;
    for (let t = a; t < b; t++) flat.set(valuesOf(this.#vars[t]!), this.#offsets[t]!);
    await allGatherShards(this.#gang, flat, this.plan.ranges);
    for (let t = 0; t < this.#vars.length; t++) {
      if (t >= a && t < b) continue;
      writeInto(this.#vars[t]!, flat.subarray(this.#offsets[t]!, this.#offsets[t]! + this.#vars[t]!.size));
    }
  }

  /**
   * Before a checkpoint (a collective): rank 0 receives the other ranks' Adam moments, keyed as
   * {@link AdamW.state} keys them; the other ranks send theirs and get undefined. Over TCP, not the
   * shared regions: a slower peer may still be reading this step's parameters there.
   */
  async gatherMoments(optimizer: AdamW): Promise<Map<string, Float32Array> | undefined> {
    const { rank } = this.#gang;
    // Rank 0 only receives (its own moments are read where they are, by AdamW.state).
    const mine = rank === 0 ? undefined : optimizer.ownMoments();
    const out = new Map<string, Float32Array>();
    for (const kind of ["adam_m", "adam_v"] as const) {
      const flat = new Float32Array(this.#length);
      const [a, b] = this.plan.tensors[rank]!;
      for (let t = a; t < b && mine; t++) flat.set(mine.get(`${this.#names[t]}/${kind}`)!, this.#offsets[t]!);
      await allGatherShards(this.#gang, flat, this.plan.ranges, { shared: false, to: 0 });
      if (rank !== 0) continue;
      for (let t = 0; t < this.#names.length; t++) {
        if (t >= a && t < b) continue;
        out.set(`${this.#names[t]}/${kind}`, flat.subarray(this.#offsets[t]!, this.#offsets[t]! + this.#vars[t]!.size));
      }
    }
    return rank === 0 ? out : undefined;
  }
}

function wasmBackend(): WasmBackendInternals | undefined {
  return tf.getBackend() === "wasm" ? (tf.backend() as unknown as WasmBackendInternals) : undefined;
}

function valuesOf(v: tf.Variable): Float32Array {
  const be = wasmBackend();
  return (be ? be.typedArrayFromHeap(v) : v.dataSync()) as Float32Array;
}

// New values of a parameter: in place in the wasm heap when nothing else shares its data (the
// usual case between steps), else through assign (a fresh tensor; cpu may keep the array: copied).
function writeInto(v: tf.Variable, values: Float32Array): void {
  const be = wasmBackend() as (WasmBackendInternals & { refCount(dataId: object): number }) | undefined;
  if (be && be.refCount(v.dataId) === 1) {
    (be.typedArrayFromHeap(v) as Float32Array).set(values);
    return;
  }
  tf.tidy(() => v.assign(tf.tensor(be ? values : values.slice(), v.shape, "float32")));
}
