// MixtureLoader: realised proportions, seekability, per-source permutations, bad weights.
import { describe, expect, it } from "vitest";
import { LevanterError } from "../errors.ts";
import { ArrayTokenSource } from "../sharding/tokenSource.ts";
import { MixtureLoader, type MixtureSource } from "./mixtureLoader.ts";

// Source k's tokens are all k·1000 + position: a row tells which source and window it came from.
function sources(weights: number[], tokens = 2000): MixtureSource[] {
  return weights.map((weight, k) => ({ name: `s${k}`, weight, source: new ArrayTokenSource(Array.from({ length: tokens }, (_, i) => k * 100_000 + i)) }));
}

describe("MixtureLoader", () => {
  it("realises the weights within 1% over 1,000 steps, also after a weightsAt change, and every row comes from its source", () => {
    const loader = new MixtureLoader(sources([0.6, 0.3, 0.1]), {
      seqLen: 8,
      batchSize: 16,
      seed: 7,
      stages: [{ step: 1000, weights: { s0: 1, s2: 3 } }],
    });
    const seen = [0, 0, 0];
    const late = [0, 0, 0];
    for (let step = 0; step < 2000; step++) {
      const b = loader.batch(step);
      expect(b.size).toBe(16);
      for (const [r, k] of b.sourceOf.entries()) {
        (step < 1000 ? seen : late)[k]!++;
        // The row's tokens are the source's own, window w's.
        expect(b.inputs[r * 8]).toBe(k * 100_000 + b.windows[r]! * 8);
      }
      // Every step gives each source ⌊B·w⌋ or ⌈B·w⌉ rows.
      const counts = loader.rowCounts(step);
      loader.weightsAt(step).forEach((w, k) => expect(Math.abs(counts[k]! - 16 * w)).toBeLessThan(1));
    }
    const share = (xs: number[]) => xs.map((x) => x / 16_000);
    share(seen).forEach((p, k) => expect(Math.abs(p - [0.6, 0.3, 0.1][k]!)).toBeLessThan(0.01));
    share(late).forEach((p, k) => expect(Math.abs(p - [0.25, 0, 0.75][k]!)).toBeLessThan(0.01));
  });

  it("seeks: a fresh loader's batch of any step equals the one reached step by step; another seed differs", () => {
    const opts = { seqLen: 8, batchSize: 12, seed: 3, stages: [{ step: 40, weights: { s1: 1 } }] };
    const walked = new MixtureLoader(sources([1, 2]), opts);
    const batches = Array.from({ length: 60 }, (_, s) => walked.batch(s));
    for (const s of [0, 1, 17, 39, 40, 59]) {
      const fresh = new MixtureLoader(sources([1, 2]), opts);
      expect(fresh.batch(s)).toEqual(batches[s]);
    }
    // Backwards seeks on the same loader too.
    expect(walked.batch(5)).toEqual(batches[5]);
    const other = new MixtureLoader(sources([1, 2]), { ...opts, seed: 4 });
    expect(other.batch(0).windows).not.toEqual(batches[0]!.windows);
  });

  it("each source reads its windows as a permutation: every window once per epoch", () => {
    const loader = new MixtureLoader(sources([1, 1], 8 * 50 + 1), { seqLen: 8, batchSize: 10, seed: 1 });
    const perSource: number[][] = [[], []];
    for (let s = 0; s < 10; s++) {
      const b = loader.batch(s);
      b.sourceOf.forEach((k, r) => perSource[k]!.push(b.windows[r]!));
    }
    for (const ws of perSource) {
      expect(ws.length).toBeGreaterThanOrEqual(45);
      expect(new Set(ws.slice(0, 50)).size).toBe(Math.min(50, ws.length));
    }
  });

  it("rejects unknown names, duplicate names, zero total weight and steps that do not increase", () => {
    const mk =
      (w: number[], stages?: { step: number; weights: Record<string, number> }[], srcs = sources(w)) =>
      () =>
        new MixtureLoader(srcs, { seqLen: 4, batchSize: 4, seed: 0, ...(stages ? { stages } : {}) });
    expect(mk([0, 0])).toThrow(LevanterError);
    expect(mk([1], [{ step: 3, weights: { nope: 1 } }])).toThrow(/nope/);
    expect(
      mk(
        [1],
        [
          { step: 3, weights: { s0: 1 } },
          { step: 3, weights: { s0: 2 } },
        ],
      ),
    ).toThrow(/increase/);
    const twice = sources([1, 1]).map((s) => ({ ...s, name: "a" }));
    expect(mk([1, 1], undefined, twice)).toThrow(/twice/);
  });
});
