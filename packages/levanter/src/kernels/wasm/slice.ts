// wasm's Slice (and SplitV, which calls it directly) copies the whole input out of the heap with
// readSync before slicing: splitting attention's fused q/k/v costs ~7 ms. These read through a
// heap view instead (numeric dtypes; strings go to the original kernels).
import { tf } from "../../tf.ts";
import type { WasmBackendLike } from "./backendLike.ts";

/** Slice built around wasm's own (`orig`, for strings). */
export function wasmSlice(orig: tf.KernelFunc): tf.KernelFunc {
  return (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo };
    if (x.dtype === "string") return orig(args);
    const { begin, size } = args.attrs as unknown as { begin: number | number[]; size: number | number[] };
    const [b, sz] = tf.slice_util.parseSliceParams(x as tf.Tensor, begin, size);
    return sliceFromHeap(args.backend as unknown as WasmBackendLike, x, b, sz);
  };
}

/** SplitV built around wasm's own (`orig`, for strings). */
export function wasmSplitV(orig: tf.KernelFunc): tf.KernelFunc {
  return (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo };
    if (x.dtype === "string") return orig(args);
    const { numOrSizeSplits, axis } = args.attrs as unknown as { numOrSizeSplits: number | number[]; axis: number };
    const ax = tf.util.parseAxisParam(axis, x.shape)[0]!;
    const sizes = tf.backend_util.prepareSplitSize(x as tf.Tensor, numOrSizeSplits, ax);
    const begin = new Array<number>(x.shape.length).fill(0);
    return sizes.map((n) => {
      const sz = [...x.shape];
      sz[ax] = n;
      const out = sliceFromHeap(args.backend as unknown as WasmBackendLike, x, [...begin], sz);
      begin[ax]! += n;
      return out;
    });
  };
}

// Copies x[begin : begin+size] (any rank) as runs along the last axis.
function sliceFromHeap(be: WasmBackendLike, x: tf.TensorInfo, begin: number[], size: number[]): tf.TensorInfo {
  const out = be.makeOutput(size, x.dtype);
  // Views are taken after makeOutput: an allocation may grow (and move) the heap.
  const src = be.typedArrayFromHeap(x);
  const dst = be.typedArrayFromHeap(out);
  const rank = x.shape.length;
  const total = tf.util.sizeFromShape(size);
  if (total === 0) return out;
  if (rank === 0) {
    dst.set(src.subarray(0, 1));
    return out;
  }
  const strides = tf.util.computeStrides(x.shape);
  if (tf.slice_util.isSliceContinous(x.shape, begin, size)) {
    const off = tf.slice_util.computeFlatOffset(begin, strides);
    dst.set(src.subarray(off, off + total));
    return out;
  }
  const run = size[rank - 1]!;
  const idx = new Array<number>(rank - 1).fill(0);
  for (let o = 0; o < total; o += run) {
    let off = begin[rank - 1]!;
    for (let d = 0; d < rank - 1; d++) off += (begin[d]! + idx[d]!) * strides[d]!;
    dst.set(src.subarray(off, off + run), o);
    for (let d = rank - 2; d >= 0; d--) {
      if (++idx[d]! < size[d]!) break;
      idx[d] = 0;
    }
  }
  return out;
}
