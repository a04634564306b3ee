// Fused layer / RMS norm with scale (and bias) as native kernels on wasm — "LevanterNorm" and
// "LevanterNormGrad" — and the op {@link nativeNorm} with its exact gradient.
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** Kernel names of the fused norm and its gradient. */
export const NORM_KERNEL = "LevanterNorm";
/** See {@link NORM_KERNEL}. */
export const NORM_GRAD_KERNEL = "LevanterNormGrad";

interface NormAttrs {
  rms: boolean;
  eps: number;
}

/** Kernel function: {x [N, D], scale [D], bias? [D]} → y. */
export function nativeNormKernel(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, attrs, backend }) => {
    const { x, scale, bias } = inputs as Record<string, tf.TensorInfo | undefined>;
    const { rms, eps } = attrs as unknown as NormAttrs;
    const be = backend as unknown as WasmBackendInternals;
    const [rows, cols] = x!.shape as [number, number];
    const out = be.makeOutput(x!.shape, "float32");
    if (rows * cols > 0) {
      (addon.norm as (...a: unknown[]) => void)(
        wasmMemory(be)!.buffer,
        offsetOf(be, x!),
        offsetOf(be, scale!),
        bias ? offsetOf(be, bias) : -1,
        offsetOf(be, out),
        rows,
        cols,
        rms,
        eps,
      );
    }
    return out;
  };
}

/** Kernel function: {x, scale, dy} → [dx, dscale, dbias (layer norm only)]. */
export function nativeNormGradKernel(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, attrs, backend }) => {
    const { x, scale, dy } = inputs as Record<string, tf.TensorInfo>;
    const { rms, eps } = attrs as unknown as NormAttrs;
    const be = backend as unknown as WasmBackendInternals;
    const [rows, cols] = x!.shape as [number, number];
    const outs = [be.makeOutput(x!.shape, "float32"), be.makeOutput([cols], "float32")];
    if (!rms) outs.push(be.makeOutput([cols], "float32"));
    (addon.normGrad as (...a: unknown[]) => void)(
      wasmMemory(be)!.buffer,
      offsetOf(be, x!),
      offsetOf(be, scale!),
      offsetOf(be, dy!),
      ...outs.map((o) => offsetOf(be, o)),
      ...(rms ? [-1] : []),
      rows,
      cols,
      rms,
      eps,
    );
    return outs;
  };
}

/**
 * `norm(x)·scale (+ bias)` over the rows of `x [N, D]`: layer norm when `bias` is given, else RMS
 * norm. The native kernels' op; call only while the native backend is active.
 */
export function nativeNorm(x: tf.Tensor2D, scale: tf.Tensor, bias: tf.Tensor | undefined, eps: number): tf.Tensor2D {
  const attrs = { rms: bias === undefined, eps };
  const run = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const save = args.pop() as tf.GradSaveFunc;
    const [xi, si, bi] = args as tf.Tensor[];
    save([xi!, si!]);
    const inputs: tf.NamedTensorMap = bi ? { x: xi!, scale: si!, bias: bi } : { x: xi!, scale: si! };
    return {
      value: tf.engine().runKernel(NORM_KERNEL, inputs, attrs as unknown as tf.NamedAttrMap) as tf.Tensor,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) =>
        tf.engine().runKernel(NORM_GRAD_KERNEL, { x: saved[0]!, scale: saved[1]!, dy: dy as tf.Tensor }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor[],
    };
  });
  return (bias ? run(x, scale, bias) : run(x, scale)) as tf.Tensor2D;
}
