// The fused AdamW update as one native kernel per parameter ("LevanterAdamW" on wasm): the same
// float32 operations in the same order as optim/adamw.ts's op-by-op update, in one pass.
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** The kernel name of the fused AdamW update. */
export const ADAMW_KERNEL = "LevanterAdamW";

/** Attributes of {@link ADAMW_KERNEL}; each is rounded to float32 as a tfjs scalar would be. */
export interface AdamWAttrs {
  clip: number;
  beta1: number;
  beta2: number;
  /** 1 − β1^t and 1 − β2^t. */
  bc1: number;
  bc2: number;
  epsilon: number;
  /** 0: no decay for this parameter. */
  weightDecay: number;
  lr: number;
}

/** The kernel function: inputs {p, g, m, v} → [p', m', v']. */
export function nativeAdamW(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, attrs, backend }) => {
    const { p, g, m, v } = inputs as Record<string, tf.TensorInfo>;
    const a = attrs as unknown as AdamWAttrs;
    const be = backend as unknown as WasmBackendInternals;
    const n = tf.util.sizeFromShape(p!.shape);
    const outs = [be.makeOutput(p!.shape, "float32"), be.makeOutput(p!.shape, "float32"), be.makeOutput(p!.shape, "float32")];
    const heap = wasmMemory(be)!.buffer;
    const adamw = addon.adamw as (...args: unknown[]) => void;
    adamw(
      heap,
      offsetOf(be, p!),
      offsetOf(be, g!),
      offsetOf(be, m!),
      offsetOf(be, v!),
      ...outs.map((o) => offsetOf(be, o)),
      n,
      a.clip,
      a.beta1,
      1 - a.beta1,
      a.beta2,
      1 - a.beta2,
      a.bc1,
      a.bc2,
      a.epsilon,
      a.weightDecay,
      a.lr,
    );
    return outs;
  };
}

/** Σ x² of a float32 tensor on the native backend, in float64 (the global gradient norm's terms). */
export function nativeSumSquares(addon: NativeAddon, x: tf.Tensor): number {
  const be = tf.backend() as unknown as WasmBackendInternals;
  return (addon.sumSquares as (h: ArrayBufferLike, p: number, n: number) => number)(wasmMemory(be)!.buffer, offsetOf(be, x), x.size);
}
