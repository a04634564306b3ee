// Fused causal multi-head / grouped-query attention as native kernels on wasm —
// "LevanterCausalAttention" and "LevanterCausalAttentionGrad" — and the op {@link nativeCausalAttention}
// with its exact gradient; rotate-half rotary positions on the same qkv layout — "LevanterRotary" —
// and the op {@link nativeRotary} (its gradient is the same kernel, transposed).
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** Kernel names of the fused causal attention and its gradient. */
export const ATTENTION_KERNEL = "LevanterCausalAttention";
/** See {@link ATTENTION_KERNEL}. */
export const ATTENTION_GRAD_KERNEL = "LevanterCausalAttentionGrad";
/** Kernel name of the rotary positions (forward, or with `inverse` its gradient). */
export const ROTARY_KERNEL = "LevanterRotary";

interface AttentionAttrs {
  batch: number;
  heads: number;
  /** Key/value heads (grouped-query attention); undefined = heads. */
  kvHeads?: number;
  scale: number;
}

function dims(qkv: tf.TensorInfo, attrs: { batch: number; heads: number; kvHeads?: number }): { b: number; t: number; h: number; hkv: number; dh: number } {
  const [rows, cols] = qkv.shape as [number, number];
  const { batch: b, heads: h } = attrs;
  const hkv = attrs.kvHeads ?? h;
  const w = h + 2 * hkv;
  if (qkv.shape.length !== 2 || hkv < 1 || h % hkv !== 0 || cols % w !== 0 || (b > 0 ? rows % b !== 0 : rows !== 0)) {
    const what = hkv === h ? "3·heads·headDim" : "(heads + 2·kvHeads)·headDim";
    throw new Error(`levanter native attention: qkv [${qkv.shape}] is not [batch·seq, ${what}] for batch ${b}, heads ${h}, kvHeads ${hkv}`);
  }
  return { b, t: b > 0 ? rows / b : 0, h, hkv, dh: cols / w };
}

/** Kernel function: {qkv [B·T, 3D]} → [out [B·T, D], probabilities [B·H, T, T]]. */
export function nativeAttentionKernel(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, attrs, backend }) => {
    const { qkv } = inputs as Record<string, tf.TensorInfo>;
    const a = attrs as unknown as AttentionAttrs;
    const { b, t, h, hkv, dh } = dims(qkv!, a);
    const be = backend as unknown as WasmBackendInternals;
    const out = be.makeOutput([b * t, h * dh], "float32");
    const probs = be.makeOutput([b * h, t, t], "float32");
    if (b * t > 0) {
      (addon.causalAttention as (...x: unknown[]) => void)(wasmMemory(be)!.buffer, offsetOf(be, qkv!), offsetOf(be, out), offsetOf(be, probs), b, t, h, dh, a.scale, hkv);
    }
    return [out, probs];
  };
}

/** Kernel function: {qkv, probs, dy [B·T, D]} → dqkv [B·T, 3D]. */
export function nativeAttentionGradKernel(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, attrs, backend }) => {
    const { qkv, probs, dy } = inputs as Record<string, tf.TensorInfo>;
    const a = attrs as unknown as AttentionAttrs;
    const { b, t, h, hkv, dh } = dims(qkv!, a);
    const be = backend as unknown as WasmBackendInternals;
    const dqkv = be.makeOutput(qkv!.shape, "float32");
    if (b * t > 0) {
      (addon.causalAttentionGrad as (...x: unknown[]) => void)(
        wasmMemory(be)!.buffer,
        offsetOf(be, qkv!),
        offsetOf(be, probs!),
        offsetOf(be, dy!),
        offsetOf(be, dqkv),
        b,
        t,
        h,
        dh,
        a.scale,
        hkv,
      );
    }
    return dqkv;
  };
}

interface RotaryAttrs {
  batch: number;
  heads: number;
  kvHeads: number;
  inverse: boolean;
}

/** Kernel function: {x [B·T, (H + 2·Hkv)·dh], cos, sin [≥T, dh]} → x with its query and key heads rotated (or, inverse, the gradient). */
export function nativeRotaryKernel(addon: NativeAddon): tf.KernelFunc {
  return ({ inputs, attrs, backend }) => {
    const { x, cos, sin } = inputs as Record<string, tf.TensorInfo>;
    const a = attrs as unknown as RotaryAttrs;
    const { b, t, h, hkv, dh } = dims(x!, a);
    const [tableRows, tableCols] = cos!.shape as [number, number];
    if (cos!.shape.length !== 2 || tableCols !== dh || tableRows < t || sin!.shape.join() !== cos!.shape.join() || dh % 2 !== 0) {
      throw new Error(`levanter native rotary: tables [${cos!.shape}] / [${sin!.shape}] are not [≥${t}, ${dh}] (headDim must be even)`);
    }
    const be = backend as unknown as WasmBackendInternals;
    const y = be.makeOutput(x!.shape, "float32");
    if (b * t > 0) {
      (addon.rotary as (...x: unknown[]) => void)(
        wasmMemory(be)!.buffer,
        offsetOf(be, x!),
        offsetOf(be, y),
        offsetOf(be, cos!),
        offsetOf(be, sin!),
        b,
        t,
        h,
        hkv,
        dh,
        tableRows,
        a.inverse,
      );
    }
    return y;
  };
}

/**
 * Rotate-half rotary positions (Hugging Face's layout) on the query and key heads of
 * `qkv [B·T, (H + 2·Hkv)·dh]`, the value heads passed through; `cos`, `sin` `[≥T, dh]` are the
 * model's tables (each half repeated). The same values as the model's op-by-op rotation, and its
 * exact gradient. Call only while the native backend is active.
 */
export function nativeRotary(qkv: tf.Tensor2D, cos: tf.Tensor2D, sin: tf.Tensor2D, batch: number, heads: number, kvHeads: number): tf.Tensor2D {
  const attrs = (inverse: boolean) => ({ batch, heads, kvHeads, inverse }) as unknown as tf.NamedAttrMap;
  const run = tf.customGrad((x, save) => {
    // The tables are kept for the gradient (the caller may free them before it runs).
    (save as tf.GradSaveFunc)([cos, sin]);
    return {
      value: tf.engine().runKernel(ROTARY_KERNEL, { x: x as tf.Tensor, cos, sin }, attrs(false)) as tf.Tensor,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) =>
        tf.engine().runKernel(ROTARY_KERNEL, { x: dy as tf.Tensor, cos: saved[0]!, sin: saved[1]! }, attrs(true)) as tf.Tensor,
    };
  }) as (x: tf.Tensor2D) => tf.Tensor2D;
  return run(qkv);
}

/**
 * Causal multi-head attention from the QKV projection's output `qkv [B·T, (H + 2·Hkv)·dh]` (query,
 * key and value heads side by side) to the merged heads `[B·T, H·dh]`: `softmax(q·kᵀ/√dh + causal
 * mask)·v` per sequence and query head, query head h reading key/value head ⌊h / (H / Hkv)⌋
 * (grouped-query attention; `kvHeads` defaults to `heads`), as the model's op-by-op form computes
 * it. The native kernels' op; call only while the native backend is active.
 */
export function nativeCausalAttention(qkv: tf.Tensor2D, batch: number, heads: number, kvHeads: number = heads): tf.Tensor2D {
  const dh = qkv.shape[1] / (heads + 2 * kvHeads);
  const attrs = { batch, heads, ...(kvHeads !== heads ? { kvHeads } : {}), scale: Math.fround(1 / Math.sqrt(dh)) };
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
