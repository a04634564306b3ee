// The determinism rule: exact fixed-point sums do not depend on order or split.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Rng } from "../rng.ts";
import { accumulateQuantized, addExact, exactSumIsNative, exponentAbove, finishMean, maxAbs, rawMean, scaleExponent, useNativeExactSum } from "./exactSum.ts";

function randomTensor(rng: Rng, n: number): Float32Array {
  // Magnitudes over ~40 binary orders, both signs: far from what a float32 running sum keeps exact.
  return Float32Array.from({ length: n }, () => (rng.next() - 0.5) * 2 ** (Math.floor(rng.next() * 40) - 30));
}

function meanOf(parts: Float32Array[][], count: number): Float32Array {
  // parts: ranks, each with its micro-batches, summed rank by rank into one accumulator per rank
  const n = parts[0]![0]!.length;
  let m = 0;
  for (const r of parts) for (const p of r) m = Math.max(m, maxAbs(p));
  const s = scaleExponent(m, count);
  const total = new Float64Array(n);
  for (const r of parts) {
    const acc = new Float64Array(n);
    for (const p of r) accumulateQuantized(acc, 0, p, s);
    for (let i = 0; i < n; i++) total[i]! += acc[i]!;
  }
  const out = new Float32Array(n);
  finishMean(total, 0, n, s, count, out, 0);
  return out;
}

describe("exact fixed-point sums", () => {
  it("exponentAbove gives the smallest power of two above a value", () => {
    expect(exponentAbove(1)).toBe(1);
    expect(exponentAbove(0.75)).toBe(0);
    expect(exponentAbove(2 ** -140)).toBe(-139);
    expect(exponentAbove(3e38)).toBe(128);
  });

  it("the mean of 12 micro-batches is bitwise the same for any order and any split over ranks", () => {
    const rng = new Rng(3);
    const mbs = Array.from({ length: 12 }, () => randomTensor(rng, 257));
    const reference = meanOf([mbs], 12);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 11 }), { minLength: 12, maxLength: 12 }), fc.integer({ min: 1, max: 12 }), (keys, ranks) => {
        const order = [...mbs.keys()].sort((a, b) => keys[a]! - keys[b]! || a - b).map((i) => mbs[i]!);
        const split = [...Array(ranks).keys()].map((r) => order.slice(Math.floor((r * 12) / ranks), Math.floor(((r + 1) * 12) / ranks)));
        expect(Buffer.from(meanOf(split, 12).buffer).equals(Buffer.from(reference.buffer))).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it("is at least as accurate as float32 (error ≤ 2^-40 of the largest value, vs a float64 reference)", () => {
    const rng = new Rng(5);
    const mbs = Array.from({ length: 8 }, () => randomTensor(rng, 1000));
    const got = meanOf([mbs], 8);
    let m = 0;
    for (const p of mbs) m = Math.max(m, maxAbs(p));
    for (let i = 0; i < 1000; i++) {
      let exact = 0;
      for (const p of mbs) exact += p[i]!;
      exact /= 8;
      // float32 rounding of the result dominates: within half an ulp of float32 plus the grid's error
      expect(Math.abs(got[i]! - exact)).toBeLessThanOrEqual(Math.abs(exact) * 2 ** -23 + m * 2 ** -40);
    }
  });

  it("a NaN or infinite value anywhere makes the whole tensor NaN; all zeros stay zero", () => {
    const bad = Float32Array.from([1, Number.POSITIVE_INFINITY, 2]);
    expect(maxAbs(bad)).toBeNaN();
    expect(maxAbs(Float32Array.from([1, Number.NaN]))).toBeNaN();
    expect([...meanOf([[bad, Float32Array.from([1, 2, 3])]], 2)].every(Number.isNaN)).toBe(true);
    expect([...meanOf([[new Float32Array(3), new Float32Array(3)]], 2)]).toEqual([0, 0, 0]);
  });

  it.runIf(exactSumIsNative())("the native loops give the JS loops' bits (ties, signs, tiny and huge maxima, NaN)", () => {
    const rng = new Rng(11);
    const cases: Float32Array[] = [
      randomTensor(rng, 4099),
      // Values that land exactly on .5 of the grid, both signs (Math.round ties go toward +∞).
      Float32Array.from({ length: 64 }, (_, i) => ((i % 2 ? -1 : 1) * (2 * i + 1)) / 2 ** 20),
      Float32Array.from({ length: 33 }, () => (rng.next() - 0.5) * 2 ** -140),
      Float32Array.from({ length: 17 }, () => (rng.next() - 0.5) * 3e38),
      new Float32Array(5),
    ];
    const run = (native: boolean) => {
      useNativeExactSum(native);
      try {
        return cases.map((x) => {
          const m = maxAbs(x);
          const s = scaleExponent(m, 3);
          const acc = new Float64Array(x.length);
          accumulateQuantized(acc, 0, x, s);
          accumulateQuantized(acc, 0, x, s);
          addExact(acc, 0, acc.slice());
          const out = new Float32Array(x.length + 2);
          finishMean(acc, 0, x.length, s, 3, out, 1);
          return { m, acc: Buffer.from(acc.buffer), out: Buffer.from(out.buffer) };
        });
      } finally {
        useNativeExactSum(true);
      }
    };
    const js = run(false);
    const nat = run(true);
    for (const [i, j] of js.entries()) {
      expect(nat[i]!.m).toBe(j.m);
      expect(nat[i]!.acc.equals(j.acc)).toBe(true);
      expect(nat[i]!.out.equals(j.out)).toBe(true);
    }
    useNativeExactSum(true);
    expect(maxAbs(Float32Array.from([1, Number.NaN, 2]))).toBeNaN();
    expect(maxAbs(Float32Array.from([1, Number.NEGATIVE_INFINITY]))).toBeNaN();
    expect(maxAbs(Float32Array.from([-3, 2]))).toBe(3);
  });

  it("rawMean (one pass over raw float32 contributions) gives the bits of quantize-into-zeros then finish, natively and in JS", () => {
    const rng = new Rng(13);
    // Longer than the native block (2048), odd, at offsets into bigger arrays; ties and a tiny tensor.
    const n = 5003;
    const sources = [randomTensor(rng, n + 7), randomTensor(rng, n + 1), Float32Array.from({ length: n }, (_, i) => ((i % 2 ? -1 : 1) * (2 * i + 1)) / 2 ** 20)];
    const offsets = [7, 1, 0];
    let m = 0;
    for (const [r, x] of sources.entries()) m = Math.max(m, maxAbs(x.subarray(offsets[r]!, offsets[r]! + n)));
    const s = scaleExponent(m, 3);
    const acc = new Float64Array(n);
    for (const [r, x] of sources.entries()) accumulateQuantized(acc, 0, x.subarray(offsets[r]!, offsets[r]! + n), s);
    const want = new Float32Array(n);
    finishMean(acc, 0, n, s, 3, want, 0);
    for (const native of exactSumIsNative() ? [true, false] : [false]) {
      useNativeExactSum(native);
      try {
        const out = new Float32Array(n + 3).fill(9);
        const copy = new Float32Array(n + 5).fill(9);
        rawMean(
          sources.map((values, r) => ({ values, offset: offsets[r]! })),
          n,
          s,
          3,
          out,
          2,
          { values: copy, offset: 4 },
        );
        expect(Buffer.from(out.buffer, 8, n * 4).equals(Buffer.from(want.buffer))).toBe(true);
        expect(Buffer.from(copy.buffer, 16, n * 4).equals(Buffer.from(want.buffer))).toBe(true);
        // Nothing outside the range is touched.
        expect([out[0], out[1], out[n + 2], copy[3], copy[n + 4]]).toEqual([9, 9, 9, 9, 9]);
        // A non-finite tensor (NaN scale) gives NaN everywhere, in both outputs.
        const nanOut = new Float32Array(4);
        const nanCopy = new Float32Array(4);
        rawMean([{ values: new Float32Array(4), offset: 0 }], 4, Number.NaN, 1, nanOut, 0, { values: nanCopy, offset: 0 });
        expect([...nanOut, ...nanCopy].every(Number.isNaN)).toBe(true);
      } finally {
        useNativeExactSum(true);
      }
    }
  });
});
