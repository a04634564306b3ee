// Native Exp over the wasm backend (float32; other dtypes go to the kernel registered before).
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** The native Exp kernel function. */
export function nativeExp(addon: NativeAddon, fallback: tf.KernelFunc): tf.KernelFunc {
  return (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo };
    if (x.dtype !== "float32") return fallback(args);
    const be = args.backend as unknown as WasmBackendInternals;
    const out = be.makeOutput(x.shape, "float32");
    const n = tf.util.sizeFromShape(x.shape);
    if (n > 0) (addon.exp as (...a: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, x), offsetOf(be, out), n);
    return out;
  };
}
