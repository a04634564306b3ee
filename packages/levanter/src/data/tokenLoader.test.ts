// The data loader: window cutting, shuffling, determinism and resume positions.
import fc from "fast-check";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { LevanterError } from "../errors.ts";
import { TokenCacheReader } from "../sharding/tokenCacheReader.ts";
import { finalizeTokenCache, writeTokenCacheShard } from "../sharding/tokenCacheWriter.ts";
import { ArrayTokenSource } from "../sharding/tokenSource.ts";
import { TokenLoader, ValidationBatches, countWindows } from "./tokenLoader.ts";

// Token i of the stream is i itself, so a window's position is visible in its contents.
const iota = (n: number) => new ArrayTokenSource(Int32Array.from({ length: n }, (_, i) => i));

describe("TokenLoader", () => {
  it("cuts windows of seqLen + 1 with targets shifted by one", () => {
    const loader = new TokenLoader(iota(1000), { seqLen: 8, batchSize: 4, seed: 3 });
    expect(loader.numWindows).toBe(countWindows(1000, 8));
    expect(loader.numWindows).toBe(124);
    const b = loader.batch(5);
    expect(b.size).toBe(4);
    for (let r = 0; r < b.size; r++) {
      const w = b.windows[r];
      for (let t = 0; t < 8; t++) {
        expect(b.inputs[r * 8 + t]).toBe(w * 8 + t);
        expect(b.targets[r * 8 + t]).toBe(w * 8 + t + 1);
      }
    }
  });

  it("is deterministic for a seed and differs between seeds", () => {
    const a = new TokenLoader(iota(5000), { seqLen: 16, batchSize: 8, seed: 11 });
    const b = new TokenLoader(iota(5000), { seqLen: 16, batchSize: 8, seed: 11 });
    const c = new TokenLoader(iota(5000), { seqLen: 16, batchSize: 8, seed: 12 });
    for (const step of [0, 1, 17, 3]) {
      expect(b.batch(step).inputs).toEqual(a.batch(step).inputs);
    }
    expect(c.batch(0).windows).not.toEqual(a.batch(0).windows);
  });

  it("gives the same batches from any resume point (no replay)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 200 }), fc.nat(), (resumeAt, seed) => {
        const uninterrupted = new TokenLoader(iota(3000), { seqLen: 10, batchSize: 6, seed });
        const expected = Array.from({ length: resumeAt + 3 }, (_, s) => uninterrupted.batch(s).windows);
        const resumed = new TokenLoader(iota(3000), { seqLen: 10, batchSize: 6, seed });
        const it = resumed.batchesFrom(resumeAt);
        for (let s = resumeAt; s < resumeAt + 3; s++) expect(it.next().value?.windows).toEqual(expected[s]);
      }),
      { numRuns: 30 },
    );
  });

  it("splits the fixed global batch across any number of ranks", () => {
    fc.assert(
      fc.property(fc.constantFrom(1, 2, 3, 4, 6, 12), fc.nat({ max: 100 }), fc.nat(), (world, step, seed) => {
        const single = new TokenLoader(iota(4000), { seqLen: 7, batchSize: 12, seed }).batch(step);
        const parts = Array.from({ length: world }, (_, rank) => new TokenLoader(iota(4000), { seqLen: 7, batchSize: 12, seed, rank, world }).batch(step));
        expect(parts.every((p) => p.size === 12 / world)).toBe(true);
        expect(parts.flatMap((p) => p.windows)).toEqual(single.windows);
        expect(Int32Array.from(parts.flatMap((p) => Array.from(p.inputs)))).toEqual(single.inputs);
        expect(Int32Array.from(parts.flatMap((p) => Array.from(p.targets)))).toEqual(single.targets);
      }),
      { numRuns: 40 },
    );
  });

  it("visits every window exactly once per epoch and reshuffles each epoch deterministically", () => {
    // 41 windows, batch 4: epochs end mid-batch, so wrap-around is exercised.
    const loader = new TokenLoader(iota(41 * 5 + 1), { seqLen: 5, batchSize: 4, seed: 9 });
    expect(loader.numWindows).toBe(41);
    const samples = Array.from({ length: 30 }, (_, s) => loader.batch(s).windows).flat();
    const epoch0 = samples.slice(0, 41);
    const epoch1 = samples.slice(41, 82);
    expect([...epoch0].sort((a, b) => a - b)).toEqual([...Array(41).keys()]);
    expect([...epoch1].sort((a, b) => a - b)).toEqual([...Array(41).keys()]);
    expect(epoch1).not.toEqual(epoch0);
    const again = new TokenLoader(iota(41 * 5 + 1), { seqLen: 5, batchSize: 4, seed: 9 });
    expect(again.batch(12).windows).toEqual(samples.slice(48, 52));
  });

  it("reads in order when shuffle is off", () => {
    const loader = new TokenLoader(iota(100), { seqLen: 4, batchSize: 3, seed: 0, shuffle: false });
    expect(loader.batch(0).windows).toEqual([0, 1, 2]);
    expect(loader.batch(7).windows).toEqual([21, 22, 23]);
    expect(loader.batch(8).windows).toEqual([0, 1, 2]);
    const five = new TokenLoader(iota(100), { seqLen: 4, batchSize: 5, seed: 0, shuffle: false });
    expect(five.batch(4).windows).toEqual([20, 21, 22, 23, 0]);
  });

  it("rejects a global batch that the ranks cannot split, and data shorter than one window", () => {
    expect(() => new TokenLoader(iota(100), { seqLen: 4, batchSize: 5, seed: 0, rank: 0, world: 2 })).toThrow(/batchSize/);
    expect(() => new TokenLoader(iota(4), { seqLen: 4, batchSize: 1, seed: 0 })).toThrow(LevanterError);
    expect(() => new TokenLoader(iota(100), { seqLen: 0, batchSize: 1, seed: 0 })).toThrow(/seqLen/);
  });
});

describe("ValidationBatches", () => {
  it("reads every window once, in order, with a short last batch", () => {
    const v = new ValidationBatches(iota(8 * 10 + 1), { seqLen: 8, batchSize: 4 });
    expect(v.numWindows).toBe(10);
    expect(v.numBatches).toBe(3);
    const windows = [...v].map((b) => b.windows);
    expect(windows).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
      [8, 9],
    ]);
    const last = v.batch(2);
    expect(Array.from(last.inputs.subarray(0, 8))).toEqual([64, 65, 66, 67, 68, 69, 70, 71]);
    expect(last.targets[15]).toBe(80);
  });

  it("splits each batch across ranks and honours maxWindows", () => {
    const all = new ValidationBatches(iota(8 * 10 + 1), { seqLen: 8, batchSize: 4 });
    const ranks = [0, 1].map((rank) => new ValidationBatches(iota(8 * 10 + 1), { seqLen: 8, batchSize: 4, rank, world: 2 }));
    for (let i = 0; i < all.numBatches; i++) {
      expect(ranks.flatMap((r) => r.batch(i).windows)).toEqual(all.batch(i).windows);
    }
    expect(new ValidationBatches(iota(8 * 10 + 1), { seqLen: 8, batchSize: 4, maxWindows: 5 }).numBatches).toBe(2);
  });
});

describe("TokenLoader over a token cache on disk", () => {
  it("serves the same batches as over the same tokens in memory, windows crossing shard boundaries", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "levanter-loader-"));
    try {
      // Three shards of uneven documents; the flat stream is what the loader sees.
      const shards = [0, 1, 2].map((s) => Array.from({ length: 5 + s }, (_, d) => Array.from({ length: 13 * (d + 1) + s }, (_, t) => (s * 97 + d * 13 + t) % 257)));
      await Promise.all(shards.map((docs, s) => writeTokenCacheShard(dir, s, docs, { tokenizer: "byte", vocabSize: 257 })));
      await finalizeTokenCache(dir);
      const flat = shards.flat(2);
      const cache = await TokenCacheReader.open(dir);
      try {
        const onDisk = new TokenLoader(cache, { seqLen: 16, batchSize: 4, seed: 5 });
        const inMemory = new TokenLoader(new ArrayTokenSource(flat), { seqLen: 16, batchSize: 4, seed: 5 });
        expect(onDisk.numWindows).toBe(inMemory.numWindows);
        for (let step = 0; step < 2 * inMemory.stepsPerEpoch; step++) {
          const a = onDisk.batch(step);
          const b = inMemory.batch(step);
          expect(a.inputs).toEqual(b.inputs);
          expect(a.targets).toEqual(b.targets);
        }
      } finally {
        cache.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
