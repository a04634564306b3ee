// The hybrid shuffle: in memory while under budget, spilled past it, same records either way.
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { fromList } from "../index.ts";
import { heldMemoryBytes } from "./memoryShuffle.ts";

interface Row {
  i: number;
  k: unknown;
  pad: string;
}

const root = await mkdtemp(path.join(os.tmpdir(), "zephyr-hybrid-"));
afterAll(() => rm(root, { recursive: true, force: true }));

/** Keys equal as data give equal strings: object keys sorted, -0 as 0 (JSON writes it as 0). */
function canon(k: unknown): string {
  return JSON.stringify(k, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

// Strings (with "\0"-prefixed ones, which the in-memory table keys differently), numbers with -0,
// objects in either key order, arrays, null and booleans.
const keyArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.constant(-0),
  fc.constantFrom("a", "b", "", "\0", "\0a", "1"),
  fc.tuple(fc.integer({ min: 0, max: 2 }), fc.boolean()).map(([x, flip]) => (flip ? { y: x % 2, x } : { x, y: x % 2 })),
  fc.tuple(fc.integer({ min: 0, max: 1 }), fc.constantFrom("p", "q")),
  fc.constantFrom(null, true, false),
);

const caseArb = fc.record({
  keys: fc.array(keyArb, { maxLength: 60, size: "max" }),
  pads: fc.array(fc.integer({ min: 0, max: 200 }), { minLength: 1, maxLength: 5 }),
  shards: fc.integer({ min: 1, max: 4 }),
  partitions: fc.integer({ min: 1, max: 3 }),
});

async function spillFiles(dir: string): Promise<number> {
  const names = await readdir(dir, { recursive: true }).catch(() => [] as string[]);
  return names.filter((n) => n.endsWith(".spill")).length;
}

// Budgets: everything held in memory, spilling after a few records, and in between (early
// mappers held, later ones spilled: reducers merge held partitions with spilled runs).
const BUDGETS = [1 << 30, 6000, 12_000];

describe("hybrid shuffle (in-memory while under budget, spill past it)", () => {
  it("deduplicate and groupBy give the same records whether held, spilled or mixed (property)", async () => {
    let run = 0;
    const spilled = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const rows: Row[] = c.keys.map((k, i) => ({ i, k, pad: "x".repeat(c.pads[i % c.pads.length]) }));
        const firstOf = new Map<string, number>();
        const groups = new Map<string, number[]>();
        for (const r of rows) {
          const ck = canon(r.k);
          if (!firstOf.has(ck)) firstOf.set(ck, r.i);
          groups.set(ck, [...(groups.get(ck) ?? []), r.i]);
        }
        for (const budget of BUDGETS) {
          const scratchDir = path.join(root, `run-${run++}`);
          const opts = { backend: "inline" as const, memoryBudgetBytes: budget, scratchDir };
          const dedup = await fromList(rows, { shards: c.shards })
            .deduplicate((r) => r.k)
            .collect(opts);
          // The first record of each key in input order (shards are contiguous ranges, in order).
          expect(dedup.map((r) => r.i).sort((a, b) => a - b)).toEqual([...firstOf.values()].sort((a, b) => a - b));
          const grouped = await fromList(rows, { shards: c.shards })
            .groupBy(
              (r) => r.k,
              (k, rs) => ({ k: canon(k), ids: rs.map((r) => r.i) }),
              { shards: c.partitions },
            )
            .collect(opts);
          expect(new Map(grouped.map((g) => [g.k, g.ids]))).toEqual(groups);
          expect(grouped.length).toBe(groups.size);
          spilled.set(budget, (spilled.get(budget) ?? 0) + (await spillFiles(scratchDir)));
          await rm(scratchDir, { recursive: true, force: true });
          expect(heldMemoryBytes()).toBe(0);
        }
      }),
      { numRuns: 20 },
    );
    // The large budget never touched the disk; the tiny one did (the middle one mixes, depending on the case).
    expect(spilled.get(1 << 30)).toBe(0);
    expect(spilled.get(6000)).toBeGreaterThan(0);
  });

  it("merges held partitions with spilled runs when only the later mappers spill", async () => {
    const rows = Array.from({ length: 400 }, (_, i) => ({ k: `u${i % 37}`, i, pad: "y".repeat(200) }));
    const scratchDir = path.join(root, "mixed");
    // About 300 bytes a record: the first shard (100 records) fits, the budget runs out in the second.
    const out = await fromList(rows, { shards: 4 })
      .deduplicate((r) => r.k)
      .collect({ backend: "inline", memoryBudgetBytes: 45_000, scratchDir });
    expect(await spillFiles(scratchDir)).toBeGreaterThan(0);
    expect(out.map((r) => r.i).sort((a, b) => a - b)).toEqual(Array.from({ length: 37 }, (_, i) => i));
    // Shard 0 (long records) spills, shard 1 (short ones) stays held: every group still lists its
    // records in input order, so the held records merge after the spilled ones.
    const skewed = rows.map((r) => ({ ...r, pad: r.i < 200 ? r.pad : "" }));
    const groups = await fromList(skewed, { shards: 2 })
      .groupBy(
        (r) => r.k,
        (k, rs) => ({ k, ids: rs.map((r) => r.i) }),
      )
      .collect({ backend: "inline", memoryBudgetBytes: 40_000, scratchDir: path.join(root, "skewed") });
    expect(await readdir(path.join(root, "skewed", "stage-0", "shard-00000"))).not.toEqual([]);
    expect(await readdir(path.join(root, "skewed", "stage-0", "shard-00001"))).toEqual([]);
    expect(groups).toHaveLength(37);
    for (const g of groups) expect(g.ids).toEqual(rows.filter((r) => r.k === g.k).map((r) => r.i));
    expect(heldMemoryBytes()).toBe(0);
  });

  it("a group key comes back in its canonical form, as from the spill path", async () => {
    const rows = [{ k: { b: 1, a: [2, { d: 1, c: -0 }] } }, { k: { a: [2, { c: 0, d: 1 }], b: 1 } }];
    for (const budget of [1 << 30, 4096]) {
      const out = await fromList(rows, { shards: 2 })
        .groupBy(
          (r) => r.k,
          (k, rs) => ({ keys: Object.keys(k as object), inner: Object.keys((k as unknown as { a: [number, object] }).a[1]), n: rs.length }),
        )
        .collect({ backend: "inline", memoryBudgetBytes: budget });
      expect(out).toEqual([{ keys: ["a", "b"], inner: ["c", "d"], n: 2 }]);
    }
  });

  it("drops what it holds when the run fails, on either side", async () => {
    const rows = Array.from({ length: 300 }, (_, i) => ({ k: i % 17, i }));
    const mapFails = fromList(rows, { shards: 3 })
      .map((r) => {
        if (r.i === 250) throw new Error("boom in map");
        return r;
      })
      .deduplicate((r) => r.k)
      .count({ backend: "inline" });
    await expect(mapFails).rejects.toMatchObject({ code: "USER_FUNCTION" });
    expect(heldMemoryBytes()).toBe(0);
    const reduceFails = fromList(rows, { shards: 3 })
      .groupBy(
        (r) => r.k,
        (k) => {
          if (k === 5) throw new Error("boom in reducer");
          return k;
        },
      )
      .count({ backend: "inline" });
    await expect(reduceFails).rejects.toMatchObject({ code: "USER_FUNCTION" });
    expect(heldMemoryBytes()).toBe(0);
  });
});
