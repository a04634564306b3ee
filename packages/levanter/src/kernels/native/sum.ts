// Native Sum over the wasm backend for float32 input and a contiguous block of reduced axes (row
// sums, column sums — the broadcast gradients — and anything between); other cases go to the
// kernel registered before. Empty reductions give zeros (wasm's own Sum leaves them unset).
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** The native Sum kernel function: x viewed as [before, reduced, after], summed over the middle in order. */
export function nativeSum(addon: NativeAddon, fallback: tf.KernelFunc): tf.KernelFunc {
  return (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo };
    const { axis, keepDims } = args.attrs as unknown as { axis: number | number[]; keepDims: boolean };
    if (x.dtype !== "float32") return fallback(args);
    const rank = x.shape.length;
    const axes = [...new Set(tf.util.parseAxisParam(axis, x.shape))].sort((a, b) => a - b);
    if (axes.length === 0 || axes[axes.length - 1]! - axes[0]! !== axes.length - 1) return fallback(args);
    const size = (from: number, to: number) => x.shape.slice(from, to).reduce((s, d) => s * d, 1);
    const p = size(0, axes[0]!);
    const r = size(axes[0]!, axes[axes.length - 1]! + 1);
    const q = size(axes[axes.length - 1]! + 1, rank);
    const shape = keepDims ? x.shape.map((d, i) => (axes.includes(i) ? 1 : d)) : x.shape.filter((_, i) => !axes.includes(i));
    const be = args.backend as unknown as WasmBackendInternals;
    const out = be.makeOutput(shape, "float32");
    if (p * q === 0) return out;
    (addon.sum as (...a: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, x), offsetOf(be, out), p, r, q);
    return out;
  };
}
