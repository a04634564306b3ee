// Fused SwiGLU product as native kernels on wasm — "LevanterSwiglu" and "LevanterSwigluGrad" —
// and the op {@link nativeSwiglu} with its exact gradient: (g·sigmoid(g))·u in one pass each way
// instead of sigmoid, two multiplies and their gradients op by op.
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** Kernel names of the fused SwiGLU product and its gradient. */
export const SWIGLU_KERNEL = "LevanterSwiglu";
/** See {@link SWIGLU_KERNEL}. */
export const SWIGLU_GRAD_KERNEL = "LevanterSwigluGrad";

function sizeOf(g: tf.TensorInfo, u: tf.TensorInfo): number {
  if (g.shape.join() !== u.shape.join()) throw new Error(`levanter native swiglu: gate [${g.shape}] and up [${u.shape}] differ in shape`);
  return tf.util.sizeFromShape(g.shape);
}

/** Kernel function: {g, u} → (g·sigmoid(g))·u. */
export function nativeSwigluKernel(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, backend }) => {
    const { g, u } = inputs as Record<string, tf.TensorInfo>;
    const n = sizeOf(g!, u!);
    const be = backend as unknown as WasmBackendInternals;
    const out = be.makeOutput(g!.shape, "float32");
    if (n > 0) (addon.swiglu as (...a: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, g!), offsetOf(be, u!), offsetOf(be, out), n);
    return out;
  };
}

/** Kernel function: {g, u, dy} → [dg, du]. */
export function nativeSwigluGradKernel(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, backend }) => {
    const { g, u, dy } = inputs as Record<string, tf.TensorInfo>;
    const n = sizeOf(g!, u!);
    const be = backend as unknown as WasmBackendInternals;
    const dg = be.makeOutput(g!.shape, "float32");
    const du = be.makeOutput(g!.shape, "float32");
    if (n > 0) {
      (addon.swigluGrad as (...a: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, g!), offsetOf(be, u!), offsetOf(be, dy!), offsetOf(be, dg), offsetOf(be, du), n);
    }
    return [dg, du];
  };
}

/** SwiGLU's product `(g·sigmoid(g))·u` (the model's op-by-op formula) on the native kernels; call only while native is active. */
export const nativeSwiglu = tf.customGrad((g, u, save) => {
  (save as tf.GradSaveFunc)([g as tf.Tensor, u as tf.Tensor]);
  return {
    value: tf.engine().runKernel(SWIGLU_KERNEL, { g: g as tf.Tensor, u: u as tf.Tensor }) as tf.Tensor,
    gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => tf.engine().runKernel(SWIGLU_GRAD_KERNEL, { g: saved[0]!, u: saved[1]!, dy: dy as tf.Tensor }) as tf.Tensor[],
  };
}) as (g: tf.Tensor, u: tf.Tensor) => tf.Tensor;
