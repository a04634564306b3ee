// Native UnsortedSegmentSum over the wasm backend — the embedding lookup's (GatherV2's) gradient —
// for float32 rows and int32 ids; other dtypes go to the kernel registered before.
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** The native UnsortedSegmentSum kernel function (rows summed in order; out-of-range ids dropped). */
export function nativeUnsortedSegmentSum(addon: NativeAddon, fallback: tf.KernelFunc): tf.KernelFunc {
  return (args) => {
    const { x, segmentIds } = args.inputs as { x: tf.TensorInfo; segmentIds: tf.TensorInfo };
    const { numSegments } = args.attrs as unknown as { numSegments: number };
    if (x.dtype !== "float32" || segmentIds.dtype !== "int32" || x.shape.length < 1) return fallback(args);
    const n = tf.util.sizeFromShape(segmentIds.shape);
    if (n !== x.shape[0]) return fallback(args);
    const be = args.backend as unknown as WasmBackendInternals;
    const row = tf.util.sizeFromShape(x.shape.slice(1));
    const out = be.makeOutput([numSegments, ...x.shape.slice(1)], "float32");
    if (numSegments * row === 0) return out;
    (addon.unsortedSegmentSum as (...a: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, x), offsetOf(be, segmentIds), offsetOf(be, out), n, row, numSegments);
    return out;
  };
}
