// Fused softmax cross-entropy for integer targets: "LevanterCrossEntropy" (per-row losses) and
// "LevanterCrossEntropyGrad" ((softmax − onehot)·dy) as native kernels on wasm, and the op
// {@link nativeTokenCrossEntropy} that ties them together with an exact gradient.
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** Kernel names of the fused cross-entropy and its gradient. */
export const CROSS_ENTROPY_KERNEL = "LevanterCrossEntropy";
/** See {@link CROSS_ENTROPY_KERNEL}. */
export const CROSS_ENTROPY_GRAD_KERNEL = "LevanterCrossEntropyGrad";

/** Kernel function: inputs {logits [R, V] float32, targets [R] int32} → losses [R]. */
export function nativeCrossEntropy(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, backend }) => {
    const { logits, targets } = inputs as Record<string, tf.TensorInfo>;
    const be = backend as unknown as WasmBackendInternals;
    const [rows, cols] = logits!.shape as [number, number];
    const out = be.makeOutput([rows], "float32");
    if (rows > 0) (addon.crossEntropy as (...a: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, logits!), offsetOf(be, targets!), offsetOf(be, out), rows, cols);
    return out;
  };
}

/** Kernel function: inputs {logits, targets, dy [R]} → dlogits [R, V]. */
export function nativeCrossEntropyGrad(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, backend }) => {
    const { logits, targets, dy } = inputs as Record<string, tf.TensorInfo>;
    const be = backend as unknown as WasmBackendInternals;
    const [rows, cols] = logits!.shape as [number, number];
    const out = be.makeOutput([rows, cols], "float32");
    if (rows * cols > 0) {
      (addon.crossEntropyGrad as (...a: unknown[]) => void)(
        wasmMemory(be)!.buffer,
        offsetOf(be, logits!),
        offsetOf(be, targets!),
        offsetOf(be, dy!),
        offsetOf(be, out),
        rows,
        cols,
      );
    }
    return out;
  };
}

/**
 * Per-row cross-entropy `−log softmax(logits)[target]` `[R]` of `logits [R, V]` and int32
 * `targets [R]`, on the native kernels (call only while the native backend is active). Equals
 * `−Σ logSoftmax(logits)·oneHot(targets)` to float32 tolerance, gradient included.
 */
export function nativeTokenCrossEntropy(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  const t = targets.dtype === "int32" ? targets : targets.toInt();
  const f = tf.customGrad((x, save) => {
    (save as tf.GradSaveFunc)([x as tf.Tensor]);
    return {
      value: tf.engine().runKernel(CROSS_ENTROPY_KERNEL, { logits: x as tf.Tensor, targets: t }) as tf.Tensor1D,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) =>
        tf.engine().runKernel(CROSS_ENTROPY_GRAD_KERNEL, { logits: saved[0]!, targets: t, dy: dy as tf.Tensor }) as tf.Tensor,
    };
  }) as (x: tf.Tensor2D) => tf.Tensor1D;
  return f(logits);
}
