// Loss and gradients of one batch from its micro-batches, by the exact fixed-point rule of
// parallel/exactSum.ts: on one rank (gradient accumulation) and across a data-parallel gang alike.
import * as tf from "@tensorflow/tfjs";
import { LevanterError } from "../errors.ts";
import type { TransformerLm } from "../models/transformer.ts";
import { allGatherBytes, allReduceExactMean, finishExactMean, type Segment } from "../parallel/collectives.ts";
import { accumulateQuantized, maxAbs, maxOrNaN, scaleExponent } from "../parallel/exactSum.ts";
import type { Gang } from "../parallel/gang.ts";

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

// One micro-batch's loss and its gradients, flattened into one float32 array in layout order.
function microBatch(model: TransformerLm, layout: Layout, inputs: Int32Array, targets: Int32Array, k: number, rowsPer: number, seqLen: number): { loss: number; flat: Float32Array } {
  const span = [k * rowsPer * seqLen, (k + 1) * rowsPer * seqLen] as const;
  const { value, grads } = tf.tidy(() => {
    const x = tf.tensor2d(inputs.subarray(...span), [rowsPer, seqLen], "int32");
    const y = tf.tensor2d(targets.subarray(...span), [rowsPer, seqLen], "int32");
    return tf.variableGrads(() => model.loss(x, y), layout.vars);
  });
  const loss = value.dataSync()[0]!;
  const flat = new Float32Array(layout.length);
  for (const [i, v] of layout.vars.entries()) flat.set(grads[v.name]!.dataSync() as Float32Array, layout.segments[i]!.offset);
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

function quantizedPartial(layout: Layout, flats: readonly Float32Array[], maxima: Float64Array, microBatches: number): { partial: Float64Array; segments: Segment[] } {
  const segments = layout.segments.map((seg, t) => ({ ...seg, s: scaleExponent(maxima[t]!, microBatches) }));
  const partial = new Float64Array(layout.length);
  for (const f of flats) {
    for (const seg of segments) if (!Number.isNaN(seg.s)) accumulateQuantized(partial, seg.offset, f.subarray(seg.offset, seg.offset + seg.length), seg.s);
  }
  return { partial, segments };
}

function toTensors(layout: Layout, mean: Float32Array): Map<string, tf.Tensor> {
  return new Map(layout.names.map((name, i) => [name, tf.tensor(mean.subarray(layout.segments[i]!.offset, layout.segments[i]!.offset + layout.segments[i]!.length), layout.vars[i]!.shape)]));
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
  const mbs = [...Array(n).keys()].map((k) => microBatch(model, layout, inputs, targets, k, microBatchSize, seqLen));
  const flats = mbs.map((m) => m.flat);
  const { partial, segments } = quantizedPartial(layout, flats, localMaxima(layout, flats), n);
  const mean = finishExactMean(partial, segments, n);
  let lossSum = 0;
  for (const m of mbs) lossSum += m.loss;
  return { loss: lossSum / n, grads: toTensors(layout, mean) };
}

/** What {@link dataParallelGradients} returns: the step's loss and gradients, and the gang's stop vote. */
export interface DataParallelStep extends LossAndGrads {
  /** Some rank asked to stop after this step (e.g. on SIGTERM): every rank stops together. */
  stop: boolean;
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
  opts: { stopRequested?: boolean; bucketElements?: number } = {},
): Promise<DataParallelStep> {
  const world = gang?.world ?? 1;
  if (world === 1) {
    return { ...computeGradients(model, inputs, targets, rows, rows / microBatches), stop: opts.stopRequested ?? false };
  }
  const rowsPer = checkSplit(rows, microBatches);
  if (microBatches < world) {
    throw new LevanterError("INVALID_CONFIG", `trainer.microBatches: ${microBatches} micro-batches cannot be spread over ${world} ranks (need at least one each)`);
  }
  const seqLen = inputs.length / rows;
  const layout = layoutOf(model);
  const [first, end] = microBatchRange(microBatches, gang!.rank, world);
  const mbs: { loss: number; flat: Float32Array }[] = [];
  for (let k = first; k < end; k++) {
    mbs.push(microBatch(model, layout, inputs, targets, k, rowsPer, seqLen));
    await new Promise((r) => setImmediate(r));
  }
  const flats = mbs.map((m) => m.flat);
  // One small exchange: each rank's per-tensor maxima, its micro-batch losses and its stop vote.
  const T = layout.segments.length;
  const mine = new Float64Array(T + mbs.length + 1);
  mine.set(localMaxima(layout, flats), 0);
  mbs.forEach((m, i) => (mine[T + i] = m.loss));
  mine[T + mbs.length] = opts.stopRequested ? 1 : 0;
  const all = await allGatherBytes(gang!, new Uint8Array(mine.buffer));
  const maxima = new Float64Array(T);
  const losses: number[] = [];
  let stop = false;
  for (const [r, bytes] of all.entries()) {
    const [a, b] = microBatchRange(microBatches, r, world);
    if (bytes.byteLength !== (T + (b - a) + 1) * 8) {
      const err = new LevanterError("DISTRIBUTED", `rank ${r} sent ${bytes.byteLength} bytes of step statistics, expected ${(T + (b - a) + 1) * 8}`);
      gang!.fail(err);
      throw err;
    }
    const v = new Float64Array(bytes.buffer, bytes.byteOffset, T + (b - a) + 1);
    for (let t = 0; t < T; t++) maxima[t] = r === 0 ? v[t]! : maxOrNaN(maxima[t]!, v[t]!);
    for (let i = 0; i < b - a; i++) losses[a + i] = v[T + i]!;
    if (v[T + (b - a)] !== 0) stop = true;
  }
  const { partial, segments } = quantizedPartial(layout, flats, maxima, microBatches);
  const mean = await allReduceExactMean(gang, partial, segments, microBatches, opts.bucketElements !== undefined ? { bucketElements: opts.bucketElements } : {});
  let lossSum = 0;
  for (const l of losses) lossSum += l;
  return { loss: lossSum / microBatches, grads: toTensors(layout, mean), stop };
}
