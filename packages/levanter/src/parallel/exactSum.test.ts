// The determinism rule: exact fixed-point sums do not depend on order or split.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Rng } from "../rng.ts";
import { accumulateQuantized, exponentAbove, finishMean, maxAbs, scaleExponent } from "./exactSum.ts";

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
});
