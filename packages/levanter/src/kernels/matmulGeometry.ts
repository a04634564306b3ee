// The geometry of a (batch) matrix product as tfjs' BatchMatMul sees it: output batch shape,
// M/N/K and batch strides (0 = broadcast from one matrix), shared by the wasm and native kernels.
import { tf } from "../tf.ts";

/** Whether two shapes are equal. */
export const sameShape = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** A product's output batch shape and sizes (element strides between batches; 0 = broadcast). */
export interface Product {
  outBatch: number[];
  batches: number;
  m: number;
  n: number;
  k: number;
  strideA: number;
  strideB: number;
}

/**
 * The product's geometry, or undefined when the fast kernels do not take it (not float32, rank < 2,
 * batch shapes that broadcast other than from one matrix, or mismatched inner sizes: the original
 * kernel then runs, and its error names the shapes).
 */
export function geometry(a: tf.TensorInfo, b: tf.TensorInfo, transposeA: boolean, transposeB: boolean): Product | undefined {
  const ra = a.shape.length;
  const rb = b.shape.length;
  if (a.dtype !== "float32" || b.dtype !== "float32" || ra < 2 || rb < 2) return undefined;
  const batchA = a.shape.slice(0, -2);
  const batchB = b.shape.slice(0, -2);
  const nA = tf.util.sizeFromShape(batchA);
  const nB = tf.util.sizeFromShape(batchB);
  let outBatch: number[];
  if (sameShape(batchA, batchB)) outBatch = batchA;
  else if (nA === 1 && ra <= rb) outBatch = batchB;
  else if (nB === 1 && rb <= ra) outBatch = batchA;
  else return undefined;
  const m = transposeA ? a.shape[ra - 1]! : a.shape[ra - 2]!;
  const k = transposeA ? a.shape[ra - 2]! : a.shape[ra - 1]!;
  const kb = transposeB ? b.shape[rb - 1]! : b.shape[rb - 2]!;
  const n = transposeB ? b.shape[rb - 2]! : b.shape[rb - 1]!;
  if (k !== kb) return undefined; // the original kernel's error names the shapes
  return { outBatch, batches: tf.util.sizeFromShape(outBatch), m, n, k, strideA: nA === 1 ? 0 : m * k, strideB: nB === 1 ? 0 : k * n };
}
