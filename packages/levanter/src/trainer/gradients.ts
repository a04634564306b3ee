// Loss and gradients of one batch from its micro-batches, by the exact fixed-point rule of
// parallel/exactSum.ts: on one rank (gradient accumulation) and across a data-parallel gang alike.
import { tf } from "../tf.ts";
import { LevanterError } from "../errors.ts";
import type { TransformerLm } from "../models/transformer.ts";
import type { WasmBackendInternals } from "../kernels/native/heap.ts";
import { contributionBuffers, scratch } from "../parallel/buffers.ts";
import { allGatherBytes, allReduceExactMean, type Contribution, type Segment } from "../parallel/collectives.ts";
import { accumulateQuantized, maxAbs, maxOrNaN, rawMean, scaleExponent } from "../parallel/exactSum.ts";
import type { Gang } from "../parallel/gang.ts";
import type { ShardPlan } from "../parallel/zero.ts";

/** Loss and gradients (by parameter name) of one batch; the caller disposes the gradients. */
export interface LossAndGrads {
  loss: number;
  grads: Map<string, tf.Tensor>;
}

/** The micro-batches `[first, end)` rank `rank` of `world` computes out of `microBatches`. */
export function microBatchRange(microBatches: number, rank: number, world: number): [number, number] {
  return [Math.floor((rank * microBatches) / world), Math.floor(((rank + 1) * microBatches) / world)];
}

interface Layout {
  names: string[];
  vars: tf.Variable[];
  segments: Segment[];
  length: number;
}

function layoutOf(model: TransformerLm): Layout {
  const names = [...model.params.keys()];
  const vars = [...model.params.values()];
  let offset = 0;
  const segments = vars.map((v) => {
    const seg = { offset, length: v.size, s: 0 };
    offset += v.size;
    return seg;
  });
  return { names, vars, segments, length: offset };
}

// One micro-batch's loss and its gradients, flattened into one float32 array in layout order
// (on the native/wasm backend straight from the tensors' heap: one copy per gradient).
function microBatch(
  model: TransformerLm,
  layout: Layout,
  inputs: Int32Array,
  targets: Int32Array,
  k: number,
  rowsPer: number,
  seqLen: number,
  into?: Float32Array,
): { loss: number; flat: Float32Array } {
  const span = [k * rowsPer * seqLen, (k + 1) * rowsPer * seqLen] as const;
  const { value, grads } = tf.tidy(() => {
    const x = tf.tensor2d(inputs.subarray(...span), [rowsPer, seqLen], "int32");
    const y = tf.tensor2d(targets.subarray(...span), [rowsPer, seqLen], "int32");
    return tf.variableGrads(() => model.loss(x, y), layout.vars);
  });
  const loss = value.dataSync()[0]!;
  const flat = into?.length === layout.length ? into : new Float32Array(layout.length);
  const be = tf.getBackend() === "wasm" ? (tf.backend() as unknown as WasmBackendInternals) : undefined;
  for (const [i, v] of layout.vars.entries()) {
    const g = grads[v.name]!;
    flat.set((be ? be.typedArrayFromHeap(g) : g.dataSync()) as Float32Array, layout.segments[i]!.offset);
  }
  tf.dispose([value, ...Object.values(grads)]);
  return { loss, flat };
}

function localMaxima(layout: Layout, flats: readonly Float32Array[]): Float64Array {
  const out = new Float64Array(layout.segments.length);
  for (const [t, seg] of layout.segments.entries()) {
    let m = 0;
    for (const f of flats) m = maxOrNaN(m, maxAbs(f.subarray(seg.offset, seg.offset + seg.length)));
    out[t] = m;
  }
  return out;
}

function quantizedPartial(
  layout: Layout,
  flats: readonly Float32Array[],
  maxima: Float64Array,
  microBatches: number,
  into?: Float64Array,
): { partial: Float64Array; segments: Segment[] } {
  const segments = layout.segments.map((seg, t) => ({ ...seg, s: scaleExponent(maxima[t]!, microBatches) }));
  const partial = into?.length === layout.length ? into.fill(0) : new Float64Array(layout.length);
  for (const f of flats) {
    for (const seg of segments) if (!Number.isNaN(seg.s)) accumulateQuantized(partial, seg.offset, f.subarray(seg.offset, seg.offset + seg.length), seg.s);
  }
  return { partial, segments };
}

// The wasm backend copies a tensor's values into its heap; others (cpu) may keep the array
// itself, so `mean` (a buffer reused next step) is copied for them.
function toTensors(layout: Layout, mean: Float32Array, [first, end]: readonly [number, number] = [0, layout.names.length]): Map<string, tf.Tensor> {
  const copies = tf.getBackend() !== "wasm";
  return new Map(
    layout.names.slice(first, end).map((name, j) => {
      const i = first + j;
      const part = mean.subarray(layout.segments[i]!.offset, layout.segments[i]!.offset + layout.segments[i]!.length);
      return [name, tf.tensor(copies ? part.slice() : part, layout.vars[i]!.shape)];
    }),
  );
}

function checkSplit(rows: number, microBatches: number): number {
  if (!Number.isInteger(microBatches) || microBatches < 1 || rows % microBatches !== 0) {
    throw new LevanterError("INVALID_CONFIG", `trainer.microBatches: ${microBatches} micro-batches do not split a batch of ${rows} sequences evenly`);
  }
  return rows / microBatches;
}

/**
 * Mean loss and its gradients over a batch of `[rows, seqLen]` inputs/targets on this process
 * alone, from micro-batches of `microBatchSize` rows. With more than one micro-batch, their
 * gradients are summed by the exact fixed-point rule, so the result is bitwise the one a
 * data-parallel gang gets from the same micro-batches ({@link dataParallelGradients}).
 */
export function computeGradients(model: TransformerLm, inputs: Int32Array, targets: Int32Array, rows: number, microBatchSize = rows): LossAndGrads {
  const seqLen = inputs.length / rows;
  const n = rows / microBatchSize;
  checkSplit(rows, n);
  if (n === 1) {
    // One micro-batch: its gradient is the step's, with no sum to order.
    const layout = layoutOf(model);
    const { value, grads } = tf.tidy(() => {
      const x = tf.tensor2d(inputs, [rows, seqLen], "int32");
      const y = tf.tensor2d(targets, [rows, seqLen], "int32");
      return tf.variableGrads(() => model.loss(x, y), layout.vars);
    });
    const loss = value.dataSync()[0]!;
    value.dispose();
    return { loss, grads: new Map(layout.names.map((name, i) => [name, grads[layout.vars[i]!.name]!])) };
  }
  const layout = layoutOf(model);
  // Buffers kept with the model from step to step (this runs to completion without yielding, so
  // nothing else uses them meanwhile).
  const mbs = [...Array(n).keys()].map((k) => microBatch(model, layout, inputs, targets, k, microBatchSize, seqLen, scratch(model, `flat${k}`, Float32Array, layout.length)));
  const flats = mbs.map((m) => m.flat);
  // The exact mean in one pass per tensor: the bits of quantizing every micro-batch into a
  // fixed-point sum and finishing it, without the 8-byte-per-element accumulator.
  const maxima = localMaxima(layout, flats);
  const mean = scratch(model, "mean", Float32Array, layout.length);
  for (const [t, seg] of layout.segments.entries()) {
    rawMean(
      flats.map((values) => ({ values, offset: seg.offset })),
      seg.length,
      scaleExponent(maxima[t]!, n),
      n,
      mean,
      seg.offset,
    );
  }
  let lossSum = 0;
  for (const m of mbs) lossSum += m.loss;
  return { loss: lossSum / n, grads: toTensors(layout, mean) };
}

const SAVE_KINDS = ["temporary", "permanent"] as const;
/** A checkpoint's kind, as rank 0 votes it with a step's statistics. */
export type SaveKind = (typeof SAVE_KINDS)[number];

/** What {@link dataParallelGradients} returns: the step's loss and gradients, and the gang's stop vote. */
export interface DataParallelStep extends LossAndGrads {
  /** Some rank asked to stop after this step (e.g. on SIGTERM): every rank stops together. */
  stop: boolean;
  /** Rank 0 asked for a checkpoint after this step (`saveRequested` there): every rank helps. */
  save: SaveKind | undefined;
  /**
   * Where this rank's time went, ms: its micro-batches' forward and backward (`compute`), the
   * statistics exchange (`stats`: mostly waiting for the slowest rank), the all-reduce (`reduce`).
   */
  timing: { compute: number; stats: number; reduce: number };
}

/**
 * The step's mean loss and gradients over `microBatches` micro-batches of the global batch,
 * this rank computing only its share ({@link microBatchRange}) and the gang reducing exactly:
 * bitwise the same for any number of ranks, and the same as {@link computeGradients} on one.
 * Between micro-batches it yields to the event loop, so heartbeats keep flowing.
 */
export async function dataParallelGradients(
  model: TransformerLm,
  inputs: Int32Array,
  targets: Int32Array,
  rows: number,
  microBatches: number,
  gang: Gang | undefined,
  opts: {
    stopRequested?: boolean;
    /** This rank (only rank 0's vote counts) wants a checkpoint of this kind after this step. */
    saveRequested?: SaveKind;
    bucketElements?: number;
    /**
     * ZeRO-1: the gradients come back only for the tensors this rank owns in `zero` (a
     * reduce-scatter). The caller must run a collective after it that every peer enters only once
     * its reduce is done (trainLm: the norm terms' all-gather) before calling this again: a rank
     * with one micro-batch computes its next gradient straight into its shared region, which a
     * slower peer may still be reading.
     */
    zero?: ShardPlan;
  } = {},
): Promise<DataParallelStep> {
  const world = gang?.world ?? 1;
  if (world === 1) {
    const t0 = performance.now();
    const r = computeGradients(model, inputs, targets, rows, rows / microBatches);
    return { ...r, stop: opts.stopRequested ?? false, save: opts.saveRequested, timing: { compute: performance.now() - t0, stats: 0, reduce: 0 } };
  }
  const rowsPer = checkSplit(rows, microBatches);
  if (microBatches < world) {
    throw new LevanterError("INVALID_CONFIG", `trainer.microBatches: ${microBatches} micro-batches cannot be spread over ${world} ranks (need at least one each)`);
  }
  const seqLen = inputs.length / rows;
  const layout = layoutOf(model);
  const [first, end] = microBatchRange(microBatches, gang!.rank, world);
  // The gang hands out where each micro-batch's gradient goes: with one micro-batch, straight
  // into what same-host peers read (no copy), else buffers kept from step to step.
  const buffers = await contributionBuffers(gang!, layout.length, end - first);
  const t0 = performance.now();
  const mbs: { loss: number; flat: Float32Array }[] = [];
  for (let k = first; k < end; k++) {
    mbs.push(microBatch(model, layout, inputs, targets, k, rowsPer, seqLen, buffers[k - first]));
    await new Promise((r) => setImmediate(r));
  }
  const flats = mbs.map((m) => m.flat);
  // One small exchange: each rank's per-tensor maxima, its micro-batch losses, its stop vote and
  // its save vote (rank 0's decides).
  const T = layout.segments.length;
  const stats = new Float64Array(T + mbs.length + 2);
  stats.set(localMaxima(layout, flats), 0);
  mbs.forEach((m, i) => (stats[T + i] = m.loss));
  stats[T + mbs.length] = opts.stopRequested ? 1 : 0;
  stats[T + mbs.length + 1] = opts.saveRequested === undefined ? 0 : SAVE_KINDS.indexOf(opts.saveRequested) + 1;
  const t1 = performance.now();
  const all = await allGatherBytes(gang!, new Uint8Array(stats.buffer));
  const t2 = performance.now();
  const maxima = new Float64Array(T);
  const losses: number[] = [];
  let stop = false;
  let save: SaveKind | undefined;
  for (const [r, bytes] of all.entries()) {
    const [a, b] = microBatchRange(microBatches, r, world);
    if (bytes.byteLength !== (T + (b - a) + 2) * 8) {
      const err = new LevanterError("DISTRIBUTED", `rank ${r} sent ${bytes.byteLength} bytes of step statistics, expected ${(T + (b - a) + 2) * 8}`);
      gang!.fail(err);
      throw err;
    }
    const v = new Float64Array(bytes.buffer, bytes.byteOffset, T + (b - a) + 2);
    for (let t = 0; t < T; t++) maxima[t] = r === 0 ? v[t]! : maxOrNaN(maxima[t]!, v[t]!);
    for (let i = 0; i < b - a; i++) losses[a + i] = v[T + i]!;
    if (v[T + (b - a)] !== 0) stop = true;
    if (r === 0) save = SAVE_KINDS[v[T + (b - a) + 1]! - 1];
  }
  // A rank with one micro-batch sends its float32 gradient (the owner of each shard quantizes it),
  // one with several the exact fixed-point sum of theirs.
  const segments = layout.segments.map((seg, t) => ({ ...seg, s: scaleExponent(maxima[t]!, microBatches) }));
  const mine: Contribution =
    flats.length === 1
      ? { kind: "raw", values: flats[0]! }
      : { kind: "fixed", partial: quantizedPartial(layout, flats, maxima, microBatches, scratch(gang!, "partial", Float64Array, layout.length)).partial };
  const kinds = [...Array(world).keys()].map((r) => {
    const [a, b] = microBatchRange(microBatches, r, world);
    return b - a === 1 ? ("raw" as const) : ("fixed" as const);
  });
  const into = scratch(gang!, "mean", Float32Array, layout.length);
  const mean = await allReduceExactMean(gang, mine, segments, microBatches, {
    kinds,
    into,
    ...(opts.bucketElements !== undefined ? { bucketElements: opts.bucketElements } : {}),
    ...(opts.zero ? { shards: opts.zero.ranges, gather: false } : {}),
  });
  let lossSum = 0;
  for (const l of losses) lossSum += l;
  const grads = toTensors(layout, mean, opts.zero?.tensors[gang!.rank]);
  return { loss: lossSum / microBatches, grads, stop, save, timing: { compute: t1 - t0, stats: t2 - t1, reduce: performance.now() - t2 } };
}
