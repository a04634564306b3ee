// Native Softmax (last axis) over the wasm backend; other axes go to the kernel registered before.
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** The native Softmax kernel function. */
export function nativeSoftmax(addon: NativeAddon, fallback: tf.KernelFunc): tf.KernelFunc {
  return (args) => {
    const { logits } = args.inputs as { logits: tf.TensorInfo };
    const { dim } = args.attrs as unknown as { dim: number };
    const rank = logits.shape.length;
    if (logits.dtype !== "float32" || rank === 0 || (dim !== -1 && dim !== rank - 1)) return fallback(args);
    const be = args.backend as unknown as WasmBackendInternals;
    const cols = logits.shape[rank - 1]!;
    const rows = tf.util.sizeFromShape(logits.shape) / Math.max(cols, 1);
    const out = be.makeOutput(logits.shape, "float32");
    if (rows * cols === 0) return out;
    (addon.softmax as (...a: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, logits), offsetOf(be, out), rows, cols);
    return out;
  };
}
