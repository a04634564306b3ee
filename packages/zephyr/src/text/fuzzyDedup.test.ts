// dedupFuzzy on a planted near-duplicate corpus (recall, precision, the same records on inline and
// threads and for 1, 3 and 8 shards), connected components against union-find, and LSH parameters.
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { closeThreadPool, connectedComponents, fromList, ZephyrError } from "../index.ts";
import { componentsOf, fuzzyDocs, plantedCorpus } from "../fixtures/fuzzyPipeline.ts";
import { fmix32, hashWord, lshParams, shingleHashes, words } from "./minhash.ts";

afterAll(async () => {
  await closeThreadPool();
});

/** Union-find reference: node → smallest id of its component. */
function unionFind(edges: readonly [number, number][]): Map<number, number> {
  const parent = new Map<number, number>();
  const find = (x: number): number => {
    if (!parent.has(x)) parent.set(x, x);
    let r = x;
    while (parent.get(r) !== r) r = parent.get(r)!;
    while (parent.get(x) !== r) {
      const n = parent.get(x)!;
      parent.set(x, r);
      x = n;
    }
    return r;
  };
  for (const [u, v] of edges) {
    const a = find(u);
    const b = find(v);
    if (a !== b) parent.set(Math.max(a, b), Math.min(a, b));
  }
  return new Map([...parent.keys()].map((k) => [k, find(k)]));
}

const sortedIds = (docs: { id: number }[]): number[] => docs.map((d) => d.id).sort((a, b) => a - b);

describe("dedupFuzzy", () => {
  const BASES = 300;
  const SEED = 7;
  const { docs, pairs } = plantedCorpus(BASES, SEED);

  it("finds the planted near-duplicates: recall ≥ 0.95 on pairs with Jaccard ≥ 0.9, precision ≥ 0.95 on what it removes", async () => {
    const { records, stats } = await fuzzyDocs({ bases: BASES, seed: SEED, shards: 3 }).collect({ backend: "inline", withStats: true });
    const kept = new Set(records.map((d) => d.id));
    const close = pairs.filter((p) => p.jaccard >= 0.9);
    expect(close.length).toBeGreaterThan(50);
    const found = close.filter((p) => !(kept.has(p.a) && kept.has(p.b))).length;
    expect(found / close.length).toBeGreaterThanOrEqual(0.95);
    // A removed document is right when it has a planted partner with Jaccard ≥ 0.8 (its family's).
    const partnered = new Set(pairs.filter((p) => p.jaccard >= 0.8).flatMap((p) => [p.a, p.b]));
    const removed = docs.filter((d) => !kept.has(d.id));
    expect(removed.length).toBeGreaterThan(50);
    expect(removed.filter((d) => partnered.has(d.id)).length / removed.length).toBeGreaterThanOrEqual(0.95);
    // Heavy copies (Jaccard < 0.5) survive beside their bases.
    const far = pairs.filter((p) => p.jaccard < 0.5);
    expect(far.length).toBeGreaterThan(10);
    expect(far.every((p) => kept.has(p.b))).toBe(true);
    // The kept record of a group is its first in input order.
    for (const p of close) if (!kept.has(p.a) || !kept.has(p.b)) expect(kept.has(Math.min(p.a, p.b)) || !kept.has(Math.max(p.a, p.b))).toBe(true);
    // Stats: components (one kept record each) and records removed.
    expect(stats.counters["dedupFuzzy.components"]).toBe(records.length);
    expect(stats.counters["dedupFuzzy.removed"]).toBe(docs.length - records.length);
    expect(stats.counters["dedupFuzzy.duplicateGroups"]).toBeGreaterThan(0);
    expect(stats.counters["dedupFuzzy.cc.rounds"]).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it("keeps the same records for 1, 3 and 8 shards, inline and on threads, with and without verify", async () => {
    const reference = sortedIds(await fuzzyDocs({ bases: BASES, seed: SEED, shards: 1 }).collect({ backend: "inline" }));
    for (const shards of [3, 8]) expect(sortedIds(await fuzzyDocs({ bases: BASES, seed: SEED, shards }).collect({ backend: "inline" }))).toEqual(reference);
    for (const shards of [1, 8]) expect(sortedIds(await fuzzyDocs({ bases: BASES, seed: SEED, shards }).collect({ backend: "threads", threads: 2 }))).toEqual(reference);
    const verified = await fuzzyDocs({ bases: BASES, seed: SEED, shards: 3, verify: true }).collect({ backend: "threads", threads: 2, withStats: true });
    expect(sortedIds(verified.records)).toEqual(sortedIds(await fuzzyDocs({ bases: BASES, seed: SEED, shards: 8, verify: true }).collect({ backend: "inline" })));
    // Verified pairs are exact: nothing below the threshold is joined.
    expect(verified.stats.counters["dedupFuzzy.candidatePairs"]).toBeGreaterThan(0);
  }, 240_000);

  it("chains, collects and writes like any Dataset; bad options are INVALID_ARGUMENT", async () => {
    const texts = ["a b c d e f g h i j", "a b c d e f g h i j", "k l m n o p q r s t", "", "u v w x y z"];
    const out = await fromList(texts, { shards: 2 })
      .map((t) => ({ t }))
      .dedupFuzzy({ text: (r) => r.t })
      .map((r) => r.t)
      .collect({ backend: "inline" });
    expect(out.sort()).toEqual(["", "a b c d e f g h i j", "k l m n o p q r s t", "u v w x y z"]);
    expect(() => fromList(texts).dedupFuzzy({ text: (t) => t, threshold: 1.5 })).toThrow(ZephyrError);
    expect(() => fromList(texts).dedupFuzzy({ text: "t" as never })).toThrow(/text: expected a function/);
    expect(() => fromList(texts).dedupFuzzy({ text: (t) => t, bands: 20, rows: 10 })).toThrow(/exceeds permutations/);
  });

  it("hashes shingles from character codes exactly as from lower-cased words (ASCII fast path, Unicode fallback)", () => {
    const reference = (text: string, n: number): number[] => {
      const wh = words(text).map(hashWord);
      if (wh.length === 0) return [];
      const span = Math.min(n, wh.length);
      return Array.from({ length: Math.max(1, wh.length - n + 1) }, (_, i) => {
        let h = span;
        for (let j = 0; j < span; j++) h = Math.imul(h ^ wh[i + j], 0x9e3779b1) + j;
        return fmix32(h);
      });
    };
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("The", "quick", "BROWN", "fox", " ", "\t", "\n  ", "Été", "İ", "x\u00a0y"), { maxLength: 40 }),
        fc.integer({ min: 1, max: 6 }),
        (parts, n) => {
          const text = parts.join(parts.length % 2 ? " " : "");
          expect([...shingleHashes(text, n)]).toEqual(reference(text, n));
        },
      ),
    );
  });

  it("derives LSH bands and rows from the threshold", () => {
    for (const [t, p] of [
      [0.8, 128],
      [0.5, 128],
      [0.9, 256],
    ] as const) {
      const { bands, rows } = lshParams(t, p);
      expect(bands * rows).toBeLessThanOrEqual(p);
      // The S-curve's midpoint (1/b)^(1/r) sits near the threshold.
      expect(Math.abs((1 / bands) ** (1 / rows) - t)).toBeLessThan(0.12);
    }
    expect(lshParams(0.8, 128).rows).toBeGreaterThan(lshParams(0.5, 128).rows);
  });
});

describe("connectedComponents", () => {
  const graphArb = fc
    .tuple(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 1, max: 4 }))
    .chain(([n, m, chain, shards]) =>
      fc.tuple(
        fc.array(fc.tuple(fc.integer({ min: 0, max: n - 1 }), fc.integer({ min: 0, max: n - 1 })), { minLength: m, maxLength: m }),
        fc.constant(chain),
        fc.constant(shards),
        fc.constant(n),
      ),
    )
    .map(([edges, chain, shards, n]) => {
      // A chain n, n+1, …, n+chain, numbered backwards so the smallest label must travel its length.
      const out: [number, number][] = [...edges];
      for (let i = 0; i < chain; i++) out.push([n + 1000 - i, n + 1000 - i - 1]);
      return { edges: out, shards };
    });

  it("matches union-find on random graphs with chains (inline)", async () => {
    await fc.assert(
      fc.asyncProperty(graphArb, async ({ edges, shards }) => {
        const got = await connectedComponents(fromList(edges, { shards })).collect({ backend: "inline" });
        const ref = unionFind(edges);
        expect(new Map(got)).toEqual(ref);
        expect(got.length).toBe(ref.size);
      }),
      { numRuns: 40, seed: 20261205 },
    );
  }, 120_000);

  it("A~B, B~C without A~C is one component; counters report rounds and components; threads agree", async () => {
    const edges: [number, number][] = [
      [5, 3],
      [3, 9],
      [20, 21],
      [7, 7],
    ];
    const { records, stats } = await connectedComponents(fromList(edges, { shards: 2 })).collect({ backend: "inline", withStats: true });
    expect(new Map(records)).toEqual(
      new Map([
        [3, 3],
        [5, 3],
        [9, 3],
        [20, 20],
        [21, 20],
        [7, 7],
      ]),
    );
    expect(stats.counters["components.components"]).toBe(3);
    expect(stats.counters["components.nonRoots"]).toBe(3);
    expect(stats.counters["components.rounds"]).toBeGreaterThanOrEqual(1);
    const long: [number, number][] = Array.from({ length: 30 }, (_, i) => [100 - i, 99 - i]);
    const threads = await componentsOf({ edges: long, shards: 3 }).collect({ backend: "threads", threads: 2, withStats: true });
    expect(new Map(threads.records)).toEqual(unionFind(long));
    // The smallest label walks the chain one hop per round.
    expect(threads.stats.counters["components.rounds"]).toBeGreaterThanOrEqual(25);
  }, 120_000);
});
