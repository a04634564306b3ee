// Native BatchMatMul over the wasm backend: every float32 product (any transpose flags, batch
// broadcast from one matrix or equal batch shapes) on the addon's GEMM, in place on the heap.
// Anything else goes to the kernel registered before. Also the product geometry _FusedMatMul shares.
import * as tf from "@tensorflow/tfjs";
import { NATIVE_ACT, type NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

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

/** The product's geometry, or undefined when the native GEMM does not take it. */
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

/** The native BatchMatMul kernel function; `fallback` runs what it does not take. */
export function nativeBatchMatMul(addon: NativeAddon, fallback: tf.KernelFunc): tf.KernelFunc {
  return (args) => {
    const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
    const { transposeA, transposeB } = args.attrs as unknown as { transposeA: boolean; transposeB: boolean };
    const g = geometry(a, b, transposeA, transposeB);
    const be = args.backend as unknown as WasmBackendInternals;
    const memory = g && wasmMemory(be);
    if (!g || !memory) return fallback(args);
    const out = be.makeOutput([...g.outBatch, g.m, g.n], "float32");
    if (g.batches * g.m * g.n === 0) return out;
    addon.matmul(memory.buffer, offsetOf(be, a), offsetOf(be, b), offsetOf(be, out), g.batches, g.m, g.n, g.k,
      transposeA, transposeB, g.strideA, g.strideB, -1, 0, 0, NATIVE_ACT.linear, 0);
    return out;
  };
}
