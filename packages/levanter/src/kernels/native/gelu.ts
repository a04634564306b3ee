// Fused GELU (tanh approximation) as native kernels on wasm — "LevanterGelu" and
// "LevanterGeluGrad" — and the op {@link nativeGelu} with its exact gradient.
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** Kernel names of the fused GELU and its gradient. */
export const GELU_KERNEL = "LevanterGelu";
/** See {@link GELU_KERNEL}. */
export const GELU_GRAD_KERNEL = "LevanterGeluGrad";

/** Kernel function: {x} → gelu(x). */
export function nativeGeluKernel(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, backend }) => {
    const { x } = inputs as Record<string, tf.TensorInfo>;
    const be = backend as unknown as WasmBackendInternals;
    const out = be.makeOutput(x!.shape, "float32");
    const n = tf.util.sizeFromShape(x!.shape);
    if (n > 0) (addon.gelu as (...a: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, x!), offsetOf(be, out), n);
    return out;
  };
}

/** Kernel function: {x, dy} → dx. */
export function nativeGeluGradKernel(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, backend }) => {
    const { x, dy } = inputs as Record<string, tf.TensorInfo>;
    const be = backend as unknown as WasmBackendInternals;
    const out = be.makeOutput(x!.shape, "float32");
    const n = tf.util.sizeFromShape(x!.shape);
    if (n > 0) (addon.geluGrad as (...a: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, x!), offsetOf(be, dy!), offsetOf(be, out), n);
    return out;
  };
}

/** GELU (tanh form, as the model's op-by-op one) on the native kernels; call only while native is active. */
export const nativeGelu = tf.customGrad((x, save) => {
  (save as tf.GradSaveFunc)([x as tf.Tensor]);
  return {
    value: tf.engine().runKernel(GELU_KERNEL, { x: x as tf.Tensor }) as tf.Tensor,
    gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => tf.engine().runKernel(GELU_GRAD_KERNEL, { x: saved[0]!, dy: dy as tf.Tensor }) as tf.Tensor,
  };
}) as (x: tf.Tensor) => tf.Tensor;
