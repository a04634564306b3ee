// Loss and gradients of one batch, accumulated over micro-batches.
import * as tf from "@tensorflow/tfjs";
import type { TransformerLm } from "../models/transformer.ts";

/** Loss and gradients (by parameter name) of one batch; the caller disposes the gradients. */
export interface LossAndGrads {
  loss: number;
  grads: Map<string, tf.Tensor>;
}

/**
 * Mean loss and its gradients over a batch of `[rows, seqLen]` inputs/targets, computed in
 * micro-batches of `microBatchSize` rows whose gradients are summed and divided by their count
 * (equal-size micro-batches, so this is the full-batch mean up to float rounding).
 */
export function computeGradients(
  model: TransformerLm,
  inputs: Int32Array,
  targets: Int32Array,
  rows: number,
  microBatchSize = rows,
): LossAndGrads {
  const seqLen = inputs.length / rows;
  const names = [...model.params.keys()];
  const vars = [...model.params.values()];
  const n = rows / microBatchSize;
  let acc: tf.Tensor[] | undefined;
  let lossSum = 0;
  for (let k = 0; k < n; k++) {
    const span = [k * microBatchSize * seqLen, (k + 1) * microBatchSize * seqLen] as const;
    const { value, grads } = tf.tidy(() => {
      const x = tf.tensor2d(inputs.subarray(...span), [microBatchSize, seqLen], "int32");
      const y = tf.tensor2d(targets.subarray(...span), [microBatchSize, seqLen], "int32");
      return tf.variableGrads(() => model.loss(x, y), vars);
    });
    lossSum += value.dataSync()[0]!;
    value.dispose();
    const g = vars.map((v) => grads[v.name]!);
    if (acc === undefined) acc = g;
    else {
      const prev: tf.Tensor[] = acc;
      acc = prev.map((a, i) => tf.tidy(() => a.add(g[i]!)));
      tf.dispose([...prev, ...g]);
    }
  }
  let final = acc!;
  if (n > 1) {
    const summed = final;
    final = summed.map((a) => tf.tidy(() => a.div(n)));
    tf.dispose(summed);
  }
  return { loss: lossSum / n, grads: new Map(names.map((name, i) => [name, final[i]!])) };
}
