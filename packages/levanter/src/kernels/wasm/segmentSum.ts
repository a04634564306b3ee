// A JS UnsortedSegmentSum for the wasm backend, which has none: without it `tf.gather`
// (embedding lookups) has no gradient there.
import { tf } from "../../tf.ts";
import type { WasmBackendLike } from "./backendLike.ts";

/** The kernel: rows of `x` summed into `numSegments` rows by `segmentIds`. */
export const wasmUnsortedSegmentSum: tf.KernelFunc = ({ inputs, attrs, backend }) => {
  const be = backend as unknown as WasmBackendLike;
  const { x, segmentIds } = inputs as { x: tf.TensorInfo; segmentIds: tf.TensorInfo };
  const numSegments = (attrs as unknown as { numSegments: number }).numSegments;
  const row = tf.util.sizeFromShape(x.shape.slice(1));
  const src = be.readSync(x.dataId) as Float32Array;
  const ids = be.readSync(segmentIds.dataId) as Int32Array;
  const out = be.makeOutput([numSegments, ...x.shape.slice(1)], x.dtype);
  const dst = be.typedArrayFromHeap(out) as Float32Array;
  dst.fill(0);
  for (let i = 0; i < ids.length; i++) {
    const s = ids[i]!;
    if (s < 0 || s >= numSegments) continue; // TF semantics: out-of-range ids are dropped
    const d = s * row,
      o = i * row;
    for (let j = 0; j < row; j++) dst[d + j]! += src[o + j]!;
  }
  return out;
};
