// The determinism rule of data parallelism: micro-batch gradients are summed EXACTLY, as integers
// on a per-tensor fixed-point grid held in float64, so the sum does not depend on the order of
// the additions nor on how the micro-batches are spread over ranks.
//
// For a tensor whose largest |value| over all M micro-batches is below 2^e, every value g is
// quantized to q = round(g · 2^s) with s = 52 − ceil(log2 M) − e. Then |q| ≤ 2^(52 − ceil(log2 M))
// and any partial sum of up to M such integers stays within 2^52: float64 adds them exactly, in
// any order and on any rank. The mean is (Σq) · 2^−s / M, rounded once to float64 and once to
// float32. The grid keeps ~52 − log2 M significant bits relative to the tensor's maximum (float32
// has 24), so the rule is also more accurate than a float32 running sum.
//
// The loops run in the native addon where it loads (native/src/exactsum.cc: the same float64
// operations per element, so the same bits); the JS loops below are the reference and the fallback.
import { loadNativeAddon } from "../kernels/native/addon.ts";

interface ExactKernels {
  exactMaxAbs(values: Float32Array, offset: number, n: number): number;
  exactQuantizeAdd(acc: Float64Array, accOffset: number, values: Float32Array, valuesOffset: number, n: number, s: number): void;
  exactAdd(dst: Float64Array, dstOffset: number, src: Float64Array, srcOffset: number, n: number): void;
  exactFinishMean(acc: Float64Array, accOffset: number, out: Float32Array, outOffset: number, n: number, s: number, count: number): void;
  exactRawMean(
    out: Float32Array,
    outOffset: number,
    copy: Float32Array | null,
    copyOffset: number,
    n: number,
    s: number,
    count: number,
    sources: Float32Array[],
    sourceOffsets: number[],
  ): void;
}

let kernels: ExactKernels | null | undefined;
function native(): ExactKernels | null {
  if (kernels === undefined) {
    const load = loadNativeAddon();
    kernels = load.ok && typeof load.addon.exactRawMean === "function" ? (load.addon as unknown as ExactKernels) : null;
  }
  return kernels;
}

/** Whether the exact sums run in the native addon (else in JS; both give the same bits). */
export function exactSumIsNative(): boolean {
  return native() !== null;
}

/** Test switch: force the JS loops (`false`) or go back to the addon where it loads (`true`). */
export function useNativeExactSum(on: boolean): void {
  kernels = on ? undefined : null;
}

/** Exponent `e` of the smallest power of two above `maxAbs` (≥ 0 and finite); -1075 for 0. */
export function exponentAbove(maxAbs: number): number {
  if (maxAbs === 0) return -1075;
  const f = new Float64Array([maxAbs]);
  const hi = new Uint32Array(f.buffer)[1]!;
  const biased = (hi >>> 20) & 0x7ff;
  // Every float32 is a normal float64, so the biased exponent is never 0 here.
  return biased - 1023 + 1;
}

/** Bits needed to count `m` micro-batches: ceil(log2 m) (0 for m = 1). */
function countBits(m: number): number {
  let b = 0;
  while (2 ** b < m) b++;
  return b;
}

/**
 * The fixed-point scale exponent `s` of a tensor from its largest |value| over all micro-batches
 * (an exact maximum, so every rank that knows the global maximum gets the same `s`).
 */
export function scaleExponent(maxAbs: number, microBatches: number): number {
  if (Number.isNaN(maxAbs)) return Number.NaN;
  return 52 - countBits(microBatches) - exponentAbove(maxAbs);
}

/** The larger of two maxima, NaN when either is (a non-finite value anywhere poisons the step). */
export function maxOrNaN(a: number, b: number): number {
  return Number.isNaN(a) || Number.isNaN(b) ? Number.NaN : Math.max(a, b);
}

/** Largest |value| of `values`; NaN when any value is not finite (so the sum becomes NaN too). */
export function maxAbs(values: Float32Array): number {
  const k = native();
  if (k) return k.exactMaxAbs(values, 0, values.length);
  let m = 0;
  for (let i = 0; i < values.length; i++) {
    const a = Math.abs(values[i]!);
    if (a > m) m = a;
    else if (!(a <= m)) return Number.NaN; // NaN; an Infinity is caught by the next line
  }
  return Number.isFinite(m) ? m : Number.NaN;
}

/**
 * Adds `values` (one micro-batch's slice of a tensor) to the exact accumulator `acc` at
 * `offset`, quantized with scale exponent `s`. `acc` holds integers; the result is exact.
 */
export function accumulateQuantized(acc: Float64Array, offset: number, values: Float32Array, s: number): void {
  const k = native();
  if (k) return k.exactQuantizeAdd(acc, offset, values, 0, values.length, s);
  // 2^s may overflow float64 for tiny maxima (s up to ~1120): scale in two exact steps.
  const half = Math.trunc(s / 2);
  const a = 2 ** half;
  const b = 2 ** (s - half);
  for (let i = 0; i < values.length; i++) acc[offset + i]! += Math.round(values[i]! * a * b);
}

/**
 * Writes the mean of `count` micro-batches, `acc · 2^−s / count`, as float32 into `out` at
 * `outOffset`. A NaN `s` (a non-finite gradient somewhere) gives NaN everywhere.
 */
export function finishMean(acc: Float64Array, accOffset: number, length: number, s: number, count: number, out: Float32Array, outOffset: number): void {
  if (Number.isNaN(s)) {
    out.fill(Number.NaN, outOffset, outOffset + length);
    return;
  }
  const k = native();
  if (k) return k.exactFinishMean(acc, accOffset, out, outOffset, length, s, count);
  const half = Math.trunc(s / 2);
  const a = 2 ** -half;
  const b = 2 ** -(s - half);
  for (let i = 0; i < length; i++) out[outOffset + i] = (acc[accOffset + i]! * a * b) / count;
}

/** `dst[dstOffset + i] += src[i]`: adds exact fixed-point partial sums (exact in any order). */
export function addExact(dst: Float64Array, dstOffset: number, src: Float64Array): void {
  const k = native();
  if (k) return k.exactAdd(dst, dstOffset, src, 0, src.length);
  for (let i = 0; i < src.length; i++) dst[dstOffset + i]! += src[i]!;
}

/** Where a run of float32 elements starts: `values[offset ...]` (a raw contribution, or where a copy goes). */
export interface RawSource {
  values: Float32Array;
  offset: number;
}

/**
 * The mean of `count` micro-batches from raw float32 contributions alone (one micro-batch each):
 * `length` elements of `sources`, quantized with scale exponent `s`, summed exactly and finished
 * into `out` at `outOffset` (and `copy` at `copyOffset` when given). The same bits as
 * {@link accumulateQuantized} of every source into a zeroed accumulator then {@link finishMean},
 * in one pass (natively, block by block in a cache-resident accumulator).
 */
export function rawMean(sources: readonly RawSource[], length: number, s: number, count: number, out: Float32Array, outOffset: number, copy?: RawSource): void {
  if (Number.isNaN(s)) {
    out.fill(Number.NaN, outOffset, outOffset + length);
    copy?.values.fill(Number.NaN, copy.offset, copy.offset + length);
    return;
  }
  const k = native();
  if (k) {
    return k.exactRawMean(
      out,
      outOffset,
      copy?.values ?? null,
      copy?.offset ?? 0,
      length,
      s,
      count,
      sources.map((x) => x.values),
      sources.map((x) => x.offset),
    );
  }
  const acc = new Float64Array(length);
  for (const x of sources) accumulateQuantized(acc, 0, x.values.subarray(x.offset, x.offset + length), s);
  finishMean(acc, 0, length, s, count, out, outOffset);
  copy?.values.set(out.subarray(outOffset, outOffset + length), copy.offset);
}
