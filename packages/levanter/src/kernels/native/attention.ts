// Fused causal multi-head attention as native kernels on wasm — "LevanterCausalAttention" and
// "LevanterCausalAttentionGrad" — and the op {@link nativeCausalAttention} with its exact gradient.
import * as tf from "@tensorflow/tfjs";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** Kernel names of the fused causal attention and its gradient. */
export const ATTENTION_KERNEL = "LevanterCausalAttention";
/** See {@link ATTENTION_KERNEL}. */
export const ATTENTION_GRAD_KERNEL = "LevanterCausalAttentionGrad";

interface AttentionAttrs {
  batch: number;
  heads: number;
  scale: number;
}

function dims(qkv: tf.TensorInfo, attrs: AttentionAttrs): { b: number; t: number; h: number; dh: number } {
  const [rows, cols] = qkv.shape as [number, number];
  const { batch: b, heads: h } = attrs;
  if (qkv.shape.length !== 2 || cols % (3 * h) !== 0 || (b > 0 ? rows % b !== 0 : rows !== 0)) {
    throw new Error(`levanter native attention: qkv [${qkv.shape}] is not [batch·seq, 3·heads·headDim] for batch ${b}, heads ${h}`);
  }
  return { b, t: b > 0 ? rows / b : 0, h, dh: cols / (3 * h) };
}

/** Kernel function: {qkv [B·T, 3D]} → [out [B·T, D], probabilities [B·H, T, T]]. */
export function nativeAttentionKernel(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, attrs, backend }) => {
    const { qkv } = inputs as Record<string, tf.TensorInfo>;
    const a = attrs as unknown as AttentionAttrs;
    const { b, t, h, dh } = dims(qkv!, a);
    const be = backend as unknown as WasmBackendInternals;
    const out = be.makeOutput([b * t, h * dh], "float32");
    const probs = be.makeOutput([b * h, t, t], "float32");
    if (b * t > 0) {
      (addon.causalAttention as (...x: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, qkv!), offsetOf(be, out), offsetOf(be, probs), b, t, h, dh, a.scale);
    }
    return [out, probs];
  };
}

/** Kernel function: {qkv, probs, dy [B·T, D]} → dqkv [B·T, 3D]. */
export function nativeAttentionGradKernel(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, attrs, backend }) => {
    const { qkv, probs, dy } = inputs as Record<string, tf.TensorInfo>;
    const a = attrs as unknown as AttentionAttrs;
    const { b, t, h, dh } = dims(qkv!, a);
    const be = backend as unknown as WasmBackendInternals;
    const dqkv = be.makeOutput(qkv!.shape, "float32");
    if (b * t > 0) {
      (addon.causalAttentionGrad as (...x: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, qkv!), offsetOf(be, probs!), offsetOf(be, dy!), offsetOf(be, dqkv), b, t, h, dh, a.scale);
    }
    return dqkv;
  };
}

/**
 * Causal multi-head attention from the QKV projection's output `qkv [B·T, 3·D]` (query, key and
 * value heads side by side) to the merged heads `[B·T, D]`: `softmax(q·kᵀ/√dh + causal mask)·v`
 * per sequence and head, as the model's op-by-op form computes it. The native kernels' op; call
 * only while the native backend is active.
 */
export function nativeCausalAttention(qkv: tf.Tensor2D, batch: number, heads: number): tf.Tensor2D {
  const dh = qkv.shape[1] / (3 * heads);
  const attrs = { batch, heads, scale: Math.fround(1 / Math.sqrt(dh)) };
  const run = tf.customGrad((x, save) => {
    const [out, probs] = tf.engine().runKernel(ATTENTION_KERNEL, { qkv: x as tf.Tensor }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor[];
    // save keeps its own references (only while a gradient is being recorded).
    (save as tf.GradSaveFunc)([x as tf.Tensor, probs!]);
    probs!.dispose();
    return {
      value: out!,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) =>
        tf.engine().runKernel(ATTENTION_GRAD_KERNEL, { qkv: saved[0]!, probs: saved[1]!, dy: dy as tf.Tensor }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor,
    };
  }) as (x: tf.Tensor2D) => tf.Tensor2D;
  return run(qkv);
}
