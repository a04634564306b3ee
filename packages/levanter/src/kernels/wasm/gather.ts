// wasm's GatherV2 takes ~6.5 ms for the 1,024-row embedding lookup of a training step; copying
// rows from the heap takes well under 1. Only the plain case (axis 0, no batch dims, float32 rows,
// int32 ids, all in range) is handled here; everything else goes to the original kernel.
import { tf } from "../../tf.ts";
import type { WasmBackendLike } from "./backendLike.ts";

/** GatherV2 built around wasm's own (`orig`), which runs every case but the plain one. */
export function wasmGather(orig: tf.KernelFunc): tf.KernelFunc {
  return (args) => {
    const { x, indices } = args.inputs as { x: tf.TensorInfo; indices: tf.TensorInfo };
    const { axis, batchDims } = args.attrs as unknown as { axis: number; batchDims: number };
    if ((axis === 0 || axis === -x.shape.length) && batchDims === 0 && x.dtype === "float32" && indices.dtype === "int32" && x.shape.length >= 1) {
      const be = args.backend as unknown as WasmBackendLike;
      const rows = x.shape[0]!;
      const row = tf.util.sizeFromShape(x.shape.slice(1));
      const ids = be.typedArrayFromHeap(indices) as Int32Array;
      let inRange = true;
      for (let i = 0; i < ids.length; i++) if (ids[i]! < 0 || ids[i]! >= rows) inRange = false;
      if (inRange) {
        const out = be.makeOutput([...indices.shape, ...x.shape.slice(1)], "float32");
        // Views are taken after makeOutput: an allocation may grow (and move) the heap.
        const src = be.typedArrayFromHeap(x) as Float32Array;
        const dst = be.typedArrayFromHeap(out) as Float32Array;
        const idv = be.typedArrayFromHeap(indices) as Int32Array;
        for (let i = 0; i < idv.length; i++) dst.set(src.subarray(idv[i]! * row, (idv[i]! + 1) * row), i * row);
        return out;
      }
    }
    return orig(args);
  };
}
