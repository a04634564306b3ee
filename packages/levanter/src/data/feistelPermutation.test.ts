// The Feistel permutation: a bijection for any size and seed.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LevanterError } from "../errors.ts";
import { FeistelPermutation } from "./feistelPermutation.ts";

describe("FeistelPermutation", () => {
  it("is a bijection of [0, n) for any n and seed", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3000 }), fc.nat(), fc.nat({ max: 1000 }), (n, seed, tweak) => {
        const p = new FeistelPermutation(n, seed, { tweak });
        const seen = new Uint8Array(n);
        let bad = 0;
        for (let i = 0; i < n; i++) {
          const y = p.apply(i);
          if (!Number.isInteger(y) || y < 0 || y >= n || seen[y] === 1) bad++;
          else seen[y] = 1;
        }
        expect(bad).toBe(0);
      }),
      { numRuns: 150 },
    );
  });

  it("stays in range and is injective on samples of a huge domain", () => {
    fc.assert(
      fc.property(fc.integer({ min: 2 ** 40, max: 2 ** 52 }), fc.nat(), fc.uniqueArray(fc.nat(), { minLength: 2, maxLength: 50 }), (n, seed, xs) => {
        const p = new FeistelPermutation(n, seed);
        const ys = xs.map((x) => p.apply(x % n));
        const distinctXs = new Set(xs.map((x) => x % n)).size;
        expect(new Set(ys).size).toBe(distinctXs);
        for (const y of ys) expect(y >= 0 && y < n).toBe(true);
      }),
    );
  });

  it("depends on seed and tweak, and is reproducible", () => {
    const n = 1000;
    const list = (seed: number, tweak = 0) => Array.from({ length: n }, (_, i) => new FeistelPermutation(n, seed, { tweak }).apply(i));
    expect(list(7)).toEqual(list(7));
    expect(list(7)).not.toEqual(list(8));
    expect(list(7, 0)).not.toEqual(list(7, 1));
    // Shuffles: few fixed points, not the identity.
    const fixed = list(7).filter((y, i) => y === i).length;
    expect(fixed).toBeLessThan(20);
  });

  it("rejects indexes outside the domain and bad seeds", () => {
    const p = new FeistelPermutation(10, 1);
    expect(() => p.apply(10)).toThrow(LevanterError);
    expect(() => p.apply(-1)).toThrow(LevanterError);
    expect(() => new FeistelPermutation(10, -1)).toThrow(/seed/);
    expect(() => new FeistelPermutation(10, 1.5)).toThrow(/seed/);
  });
});
