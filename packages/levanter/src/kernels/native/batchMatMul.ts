// Native BatchMatMul over the wasm backend: every float32 product (any transpose flags, batch
// broadcast from one matrix or equal batch shapes) on the addon's GEMM, in place on the heap.
// Anything else goes to the kernel registered before.
import { tf } from "../../tf.ts";
import { NATIVE_ACT, type NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";
import { geometry } from "../matmulGeometry.ts";

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
    addon.matmul(
      memory.buffer,
      offsetOf(be, a),
      offsetOf(be, b),
      offsetOf(be, out),
      g.batches,
      g.m,
      g.n,
      g.k,
      transposeA,
      transposeB,
      g.strideA,
      g.strideB,
      -1,
      0,
      0,
      NATIVE_ACT.linear,
      0,
    );
    return out;
  };
}
