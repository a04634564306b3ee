// Native elementwise Add, Sub, Multiply and RealDiv with broadcasting over the wasm backend
// (float32 operands whose broadcast collapses to at most 4 dimensions; the rest goes to the kernel
// registered before). Each element is one IEEE float32 operation: the same bits as tfjs' kernels.
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** The addon's op codes of the binary kernels, by tfjs kernel name. */
export const BINARY_OPS = { Add: 0, Sub: 1, Multiply: 2, RealDiv: 3 } as const;

/** The output shape and, over at most 4 collapsed dimensions, each operand's element strides (0: broadcast). */
export interface BroadcastPlan {
  shape: number[];
  dims: number[];
  sa: number[];
  sb: number[];
}

/**
 * Plans `a ∘ b` with numpy broadcasting: right-aligned shapes, size-1 dimensions dropped and
 * neighbours merged where both operands stay contiguous (or both broadcast). Undefined when the
 * result needs more than 4 dimensions.
 */
export function broadcastPlan(aShape: number[], bShape: number[]): BroadcastPlan | undefined {
  const shape = tf.backend_util.assertAndGetBroadcastShape(aShape, bShape);
  const r = shape.length;
  const pad = (s: number[]) => [...Array<number>(r - s.length).fill(1), ...s];
  const [pa, pb] = [pad(aShape), pad(bShape)];
  const stridesOf = (p: number[]) => {
    const st = Array<number>(r).fill(0);
    let acc = 1;
    for (let k = r - 1; k >= 0; k--) {
      st[k] = p[k] === 1 ? 0 : acc;
      acc *= p[k]!;
    }
    return st;
  };
  const [fa, fb] = [stridesOf(pa), stridesOf(pb)];
  const dims: number[] = [];
  const sa: number[] = [];
  const sb: number[] = [];
  for (let k = 0; k < r; k++) {
    const d = shape[k]!;
    if (d === 1) continue;
    const last = dims.length - 1;
    // Merge into the previous dimension when, for both operands, stepping it equals stepping this
    // one d times (contiguous), or both strides are 0 (broadcast over both).
    if (last >= 0 && sa[last] === fa[k]! * d && sb[last] === fb[k]! * d) {
      dims[last] = dims[last]! * d;
      sa[last] = fa[k]!;
      sb[last] = fb[k]!;
    } else {
      dims.push(d);
      sa.push(fa[k]!);
      sb.push(fb[k]!);
    }
  }
  if (dims.length > 4) return undefined;
  while (dims.length < 4) {
    dims.unshift(1);
    sa.unshift(0);
    sb.unshift(0);
  }
  return { shape, dims, sa, sb };
}

/** The native kernel function of one binary op (`kernel`: a key of {@link BINARY_OPS}). */
export function nativeBinary(kernel: keyof typeof BINARY_OPS) {
  const op = BINARY_OPS[kernel];
  return (addon: NativeAddon, fallback: tf.KernelFunc): tf.KernelFunc =>
    (args) => {
      const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
      if (a.dtype !== "float32" || b.dtype !== "float32") return fallback(args);
      const plan = broadcastPlan(a.shape, b.shape);
      if (!plan) return fallback(args);
      const be = args.backend as unknown as WasmBackendInternals;
      const out = be.makeOutput(plan.shape, "float32");
      if (tf.util.sizeFromShape(plan.shape) === 0) return out;
      (addon.binary as (...x: unknown[]) => void)(wasmMemory(be)!.buffer, op, offsetOf(be, a), offsetOf(be, b), offsetOf(be, out), ...plan.dims, ...plan.sa, ...plan.sb);
      return out;
    };
}
