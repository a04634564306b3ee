// sampleToken: greedy ties, the whole-vocabulary fast path against the general path's arithmetic, top-k and top-p support.
import { describe, expect, it } from "vitest";
import { Rng } from "../rng.ts";
import { sampleToken } from "./sampling.ts";

// The general path written out for the whole vocabulary: ids 0..V-1, float64 weights, a sum in id order.
function reference(row: Float32Array, temperature: number, rng: Rng): number {
  let max = -Infinity;
  for (const x of row) if (x > max) max = x;
  const weights = Array.from(row, (x) => Math.exp((x - max) / temperature));
  let u = rng.next() * weights.reduce((s, w) => s + w, 0);
  for (let j = 0; j < weights.length; j++) if ((u -= weights[j]!) < 0) return j;
  return row.length - 1;
}

describe("sampleToken", () => {
  const logits = (seed: number) => Float32Array.from(new Rng(seed).normal(257, 2));

  it("draws over the whole vocabulary exactly as the general path's arithmetic does", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const row = logits(seed);
      for (const t of [0.5, 1, 1.7]) expect(sampleToken(row, t, undefined, 1, new Rng(seed))).toBe(reference(row, t, new Rng(seed)));
    }
  });

  it("is greedy at temperature 0 (ties: the lowest id) and keeps draws inside top_k and top_p", () => {
    expect(sampleToken(Float32Array.from([1, 3, 3, 2]), 0, undefined, 1, new Rng(1))).toBe(1);
    const row = logits(7);
    const order = Array.from(row.keys()).sort((a, b) => row[b]! - row[a]! || a - b);
    const rng = new Rng(3);
    for (let i = 0; i < 300; i++) expect(order.slice(0, 5)).toContain(sampleToken(row, 1, 5, 1, rng));
    // A tiny top_p keeps only the likeliest token.
    for (let i = 0; i < 50; i++) expect(sampleToken(row, 1, undefined, 1e-6, rng)).toBe(order[0]);
  });
});
