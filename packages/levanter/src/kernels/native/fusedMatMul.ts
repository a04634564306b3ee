// Native _FusedMatMul over the wasm backend: the BatchMatMul product with the bias and activation
// applied in the GEMM's epilogue, per output tile. prelu and other bias broadcasts go to the
// kernel registered before.
import { tf } from "../../tf.ts";
import { NATIVE_ACT, type NativeAddon } from "./addon.ts";
import { geometry, sameShape } from "../matmulGeometry.ts";
import { offsetOf, wasmMemory, type WasmBackendInternals } from "./heap.ts";

/** The native _FusedMatMul kernel function (bias broadcast over rows or batches; no prelu). */
export function nativeFusedMatMul(addon: NativeAddon, fallback: tf.KernelFunc): tf.KernelFunc {
  return (args) => {
    const { a, b, bias, preluActivationWeights } = args.inputs as Record<string, tf.TensorInfo | undefined>;
    const { transposeA, transposeB, activation, leakyreluAlpha } = args.attrs as unknown as {
      transposeA: boolean;
      transposeB: boolean;
      activation: string;
      leakyreluAlpha?: number;
    };
    const act = NATIVE_ACT[activation as keyof typeof NATIVE_ACT];
    const g = geometry(a!, b!, transposeA, transposeB);
    const be = args.backend as unknown as WasmBackendInternals;
    const memory = g && wasmMemory(be);
    if (!g || !memory || act === undefined || preluActivationWeights) return fallback(args);
    // Bias: n values broadcast over everything, or [m, n] per output matrix (shared or per batch).
    let biasMode = 0;
    let biasStride = 0;
    if (bias) {
      if (bias.dtype !== "float32") return fallback(args);
      const size = tf.util.sizeFromShape(bias.shape);
      const last = bias.shape[bias.shape.length - 1] ?? 1;
      const outShape = [...g.outBatch, g.m, g.n];
      if (bias.shape.length > outShape.length) return fallback(args);
      if (size === g.n && last === g.n) biasMode = 0;
      else if (size === g.m * g.n && last === g.n && (bias.shape[bias.shape.length - 2] ?? 1) === g.m) biasMode = 1;
      else if (size === g.batches * g.m * g.n && sameShape(bias.shape, outShape)) {
        biasMode = 2;
        biasStride = g.m * g.n;
      } else return fallback(args);
    }
    const out = be.makeOutput([...g.outBatch, g.m, g.n], "float32");
    if (g.batches * g.m * g.n === 0) return out;
    addon.matmul(
      memory.buffer,
      offsetOf(be, a!),
      offsetOf(be, b!),
      offsetOf(be, out),
      g.batches,
      g.m,
      g.n,
      g.k,
      transposeA,
      transposeB,
      g.strideA,
      g.strideB,
      bias ? offsetOf(be, bias) : -1,
      biasMode,
      biasStride,
      act,
      leakyreluAlpha ?? 0.2,
    );
    return out;
  };
}
