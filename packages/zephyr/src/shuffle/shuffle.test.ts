// The spill shuffle: key codec, writer, external merge and partition readers.
import { mkdir, mkdtemp, readdir, rm, truncate, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { pack } from "msgpackr";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ZephyrError } from "../errors.ts";
import { canonicalKey, encodeKey, loadKeyHasher } from "./keyCodec.ts";
import { ExternalMerge } from "./mergeRuns.ts";
import { JOIN_LEFT_TAG, JOIN_RIGHT_TAG, dedupPartition, groupPartition, joinPartition, partitionSizes } from "./shuffleReader.ts";
import { ShuffleWriter } from "./shuffleWriter.ts";
import type { SpillRun } from "./spillRun.ts";
import { FRAME_HEADER_BYTES, segmentsOf } from "./spillRun.ts";

let root: string;
let counter = 0;
beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "zephyr-shuffle-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function freshDir(): Promise<string> {
  const dir = path.join(root, `case-${counter++}`);
  await mkdir(dir);
  return dir;
}

interface Row {
  k: unknown;
  v: number;
}

/** Shards rows round-robin over `mappers` writers, like a map stage would. */
async function scatter(
  rows: readonly Row[],
  opts: { dir: string; mappers: number; partitions: number; budget: number; tag?: number; name?: string; sort?: boolean; dedup?: boolean },
): Promise<SpillRun[]> {
  const runs: SpillRun[] = [];
  for (let m = 0; m < opts.mappers; m++) {
    const w = await ShuffleWriter.create({
      dir: opts.dir,
      numPartitions: opts.partitions,
      memoryBudgetBytes: opts.budget,
      name: `${opts.name ?? "m"}${m}`,
      tag: opts.tag,
      sort: opts.sort,
      dedup: opts.dedup,
    });
    // Contiguous slices keep "input order" = mapper order, then position.
    const per = Math.ceil(rows.length / opts.mappers);
    for (const r of rows.slice(m * per, (m + 1) * per)) w.add(r.k, r);
    runs.push(...w.close().runs);
  }
  return runs;
}

/** In-memory reference: groups in first-seen order, keyed by canonical encoding. */
function referenceGroups(rows: readonly Row[]): Map<string, Row[]> {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const id = Buffer.from(encodeKey(r.k)).toString("hex");
    const g = groups.get(id);
    if (g) g.push(r);
    else groups.set(id, [r]);
  }
  return groups;
}

// Keys that stress canonicalisation: objects with shuffled key order, -0, nested arrays, collisions in few values.
const keyArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.constantFrom(0, -0, "a", "b", "", null, true),
  fc.tuple(fc.integer({ min: 0, max: 2 }), fc.string({ maxLength: 2 })),
  fc.record({ x: fc.integer({ min: 0, max: 2 }), y: fc.constantFrom("p", "q") }).map((o) => (o.x % 2 ? { y: o.y, x: o.x } : o)),
);
const rowsArb = fc.array(keyArb, { maxLength: 300 }).map((keys) => keys.map((k, v) => ({ k, v })));
const layoutArb = fc.record({
  mappers: fc.integer({ min: 1, max: 3 }),
  partitions: fc.integer({ min: 1, max: 5 }),
  budget: fc.constantFrom(4096, 16384, 1 << 20),
  maxFanIn: fc.constantFrom(2, 3, 32),
});

/** One spill frame written by hand (tag 0), with a chosen sort hash. */
function handFrame(key: unknown, value: unknown, sortHash: number): Buffer {
  const k = Buffer.from(encodeKey(key));
  const v = Buffer.from(pack(value));
  const head = Buffer.alloc(FRAME_HEADER_BYTES);
  head.writeUInt32LE(FRAME_HEADER_BYTES - 4 + k.length + v.length, 0);
  head.writeDoubleLE(sortHash, 4);
  head[12] = 0;
  head.writeUInt32LE(k.length, 13);
  return Buffer.concat([head, k, v]);
}

const mergeOpts = (dir: string, maxFanIn: number) => ({ tmpDir: dir, memoryBudgetBytes: 256 * 1024, maxFanIn });

describe("shuffle", () => {
  it("groupBy equals the in-memory reference, across partitions, spills and multi-pass merges", async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, layoutArb, async (rows, layout) => {
        const dir = await freshDir();
        const runs = await scatter(rows, { dir, ...layout });
        const got = new Map<string, number[]>();
        for (let p = 0; p < layout.partitions; p++) {
          for (const g of groupPartition<Row>(runs, p, mergeOpts(dir, layout.maxFanIn))) {
            const id = Buffer.from(encodeKey(g.key)).toString("hex");
            expect(got.has(id)).toBe(false); // each key is one group, in one partition
            expect(g.key).toEqual(canonicalKey(g.key));
            got.set(
              id,
              [...g.values].map((r) => r.v),
            );
          }
        }
        // Values are compared by identity (v): msgpack, like JSON, turns a -0 inside a record into 0.
        const want = new Map([...referenceGroups(rows)].map(([id, g]) => [id, g.map((r) => r.v)]));
        expect(new Map([...got].sort())).toEqual(new Map([...want].sort()));
        // Only the mappers' runs remain: intermediate merge runs were removed.
        expect((await readdir(dir)).sort()).toEqual(runs.map((r) => path.basename(r.path)).sort());
        await rm(dir, { recursive: true });
      }),
      { numRuns: 60 },
    );
  });

  it("deduplicate keeps the first record of every key (writers sorting or not, deduplicating or not)", async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, layoutArb, fc.boolean(), fc.boolean(), async (rows, layout, sort, dedup) => {
        const dir = await freshDir();
        const runs = await scatter(rows, { dir, ...layout, sort, dedup });
        const got: number[] = [];
        for (let p = 0; p < layout.partitions; p++) for (const r of dedupPartition<Row>(runs, p, mergeOpts(dir, layout.maxFanIn))) got.push(r.v);
        const want = [...referenceGroups(rows).values()].map((g) => g[0].v);
        expect(got.sort((a, b) => a - b)).toEqual(want.sort((a, b) => a - b));
        await rm(dir, { recursive: true });
      }),
      { numRuns: 60 },
    );
  });

  it("deduplicate and groupBy over arrival-order runs: hashed in memory, or sorted then merged past the budget", async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, layoutArb, fc.boolean(), async (keyed, layout, fits) => {
        const dir = await freshDir();
        // Long values, so that a partition outgrows the smallest merge budget (256 KiB).
        const rows = keyed.map((r) => ({ ...r, pad: "z".repeat(1500) }));
        const runs = await scatter(rows, { dir, ...layout, sort: false });
        expect(runs.every((r) => r.sorted === false)).toBe(true);
        const opts = { ...mergeOpts(dir, layout.maxFanIn), memoryBudgetBytes: fits ? 1 << 26 : 256 * 1024 };
        const got: number[] = [];
        for (let p = 0; p < layout.partitions; p++) for (const r of dedupPartition<Row>(runs, p, opts)) got.push(r.v);
        const reference = referenceGroups(rows);
        expect(got.sort((a, b) => a - b)).toEqual([...reference.values()].map((g) => g[0].v).sort((a, b) => a - b));
        const groups = new Map<string, number[]>();
        for (let p = 0; p < layout.partitions; p++) {
          for (const g of groupPartition<Row>(runs, p, opts))
            groups.set(
              Buffer.from(encodeKey(g.key)).toString("hex"),
              [...g.values].map((r) => r.v),
            );
        }
        expect(groups).toEqual(new Map([...reference].map(([k, g]) => [k, g.map((r) => r.v)])));
        // The sorted copies of arrival-order segments are gone with the merge.
        expect((await readdir(dir)).sort()).toEqual(runs.map((r) => path.basename(r.path)).sort());
        await rm(dir, { recursive: true });
      }),
      { numRuns: 30 },
    );
  });

  it("a deduplicating writer drops a record whose key it still buffers", async () => {
    // Under a budget that holds everything, a mapper writes each key once, its first record.
    const dir = await freshDir();
    const w = await ShuffleWriter.create({ dir, numPartitions: 3, sort: false, dedup: true });
    const keys = ["a", { x: 1, y: 2 }, { y: 2, x: 1 }, "a", -0, 0, [1, "b"], [1, "b"], "b"];
    expect(keys.map((k, v) => w.add(k, { v }))).toEqual([true, true, false, false, true, false, true, false, true]);
    const out = w.close();
    expect(out.records).toBe(5);
    expect(out.runs.reduce((a, r) => a + r.counts.reduce((x, y) => x + y, 0), 0)).toBe(5);
  });

  it("deduplicate sorts and merges arrival-order runs whose partition outgrows the budget", async () => {
    const dir = await freshDir();
    const rows = Array.from({ length: 60 }, (_, v) => ({ k: `key-${(v * 7) % 11}`, v, pad: "q".repeat(20_000) }));
    const runs = await scatter(rows, { dir, mappers: 3, partitions: 1, budget: 64 * 1024, sort: false });
    expect(runs.length).toBeGreaterThan(3);
    const got = [...dedupPartition<Row>(runs, 0, { tmpDir: dir, memoryBudgetBytes: 256 * 1024, maxFanIn: 3 })].map((r) => r.v);
    // Past the budget the output comes in key-hash order, as from sorted runs; the first of each key is kept.
    const sortedRuns = await scatter(rows, { dir: await freshDir(), mappers: 3, partitions: 1, budget: 64 * 1024 });
    expect(got).toEqual([...dedupPartition<Row>(sortedRuns, 0, { tmpDir: dir, memoryBudgetBytes: 256 * 1024 })].map((r) => r.v));
    expect([...got].sort((a, b) => a - b)).toEqual(Array.from({ length: 11 }, (_, v) => v));
    expect((await readdir(dir)).sort()).toEqual(runs.map((r) => path.basename(r.path)).sort());
  });

  it.each(["inner", "left"] as const)("%s join equals the nested-loop reference", async (kind) => {
    await fc.assert(
      fc.asyncProperty(rowsArb, rowsArb, layoutArb, async (lefts, rights, layout) => {
        const dir = await freshDir();
        const leftRuns = await scatter(lefts, { dir, ...layout, tag: JOIN_LEFT_TAG, name: "l" });
        const rightRuns = await scatter(rights, { dir, ...layout, tag: JOIN_RIGHT_TAG, name: "r" });
        const got: (readonly [Row, Row | undefined])[] = [];
        for (let p = 0; p < layout.partitions; p++) got.push(...joinPartition<Row, Row>(leftRuns, rightRuns, p, kind, mergeOpts(dir, layout.maxFanIn)));
        const want: (readonly [Row, Row | undefined])[] = [];
        const same = (a: unknown, b: unknown): boolean => Buffer.from(encodeKey(a)).equals(encodeKey(b));
        for (const l of lefts) {
          const matches = rights.filter((r) => same(l.k, r.k));
          if (matches.length === 0 && kind === "left") want.push([l, undefined]);
          for (const r of matches) want.push([l, r]);
        }
        const order = (x: readonly [Row, Row | undefined]): number => x[0].v * 1000 + (x[1] ? x[1].v : -1);
        expect(got.map(order).sort((a, b) => a - b)).toEqual(want.map(order).sort((a, b) => a - b));
        await rm(dir, { recursive: true });
      }),
      { numRuns: 30 },
    );
  });

  it("orders groups deterministically and keeps input order inside a group", async () => {
    const rows = Array.from({ length: 3000 }, (_, v) => ({ k: `key-${v % 37}`, v }));
    const dir = await freshDir();
    const run = async () => {
      const runs = await scatter(rows, { dir, mappers: 3, partitions: 2, budget: 8192, name: `d${counter++}-` });
      const out: [unknown, number[]][] = [];
      for (let p = 0; p < 2; p++) for (const g of groupPartition<Row>(runs, p, mergeOpts(dir, 4))) out.push([g.key, [...g.values].map((r) => r.v)]);
      return { out, runs: runs.length };
    };
    const a = await run();
    const b = await run();
    expect(a.runs).toBeGreaterThan(10);
    expect(a.out).toEqual(b.out);
    for (const [, vs] of a.out) expect(vs).toEqual([...vs].sort((x, y) => x - y));
  });

  it("streams a group's values lazily and skips what the reducer leaves", async () => {
    const rows = Array.from({ length: 3000 }, (_, v) => ({ k: v % 3, v }));
    const dir = await freshDir();
    const runs = await scatter(rows, { dir, mappers: 2, partitions: 1, budget: 4096 });
    const firstTwo: number[][] = [];
    const stale: Iterable<Row>[] = [];
    for (const g of groupPartition<Row>(runs, 0, mergeOpts(dir, 3))) {
      const it = g.values[Symbol.iterator]();
      firstTwo.push([(it.next().value as Row).v, (it.next().value as Row).v]);
      stale.push(g.values);
    }
    expect(firstTwo.length).toBe(3);
    expect(firstTwo.map(([a, b]) => b - a)).toEqual([3, 3, 3]);
    // Iterating a group's values after moving on yields nothing (no values of another group).
    expect([...stale[0]]).toEqual([]);
  });

  it("routes keys by XXH64 of the canonical encoding, independent of object key order", async () => {
    const h = await loadKeyHasher();
    const a = encodeKey({ a: 1, b: [1, { d: 2, c: 3 }] });
    const b = encodeKey({ b: [1, { c: 3, d: 2 }], a: 1 });
    expect(Buffer.from(a).equals(b)).toBe(true);
    expect(h.hash(a)).toBe(h.hash(b));
    expect(encodeKey(-0)).toEqual(encodeKey(0));
    const counts = new Array<number>(8).fill(0);
    for (let i = 0; i < 8000; i++) counts[h.partitionOf(encodeKey(`k${i}`), 8)]++;
    for (const c of counts) expect(c).toBeGreaterThan(800);
  });

  it("keeps two attempts of one mapper (same name, same dir) from overwriting each other", async () => {
    const dir = await freshDir();
    const a = await ShuffleWriter.create({ dir, numPartitions: 1, name: "m0" });
    const b = await ShuffleWriter.create({ dir, numPartitions: 1, name: "m0" });
    for (let i = 0; i < 100; i++) {
      a.add(i, { i, attempt: "a" });
      b.add(i, { i, attempt: "b" });
    }
    const runs = [...a.close().runs, ...b.close().runs];
    expect(new Set(runs.map((r) => r.path)).size).toBe(2);
    const attempts = new Set<string>();
    for (const r of dedupPartition<{ attempt: string }>(runs.slice(1), 0, mergeOpts(dir, 32))) attempts.add(r.attempt);
    expect(attempts).toEqual(new Set(["b"]));
  });

  it("reports partition sizes, refuses bad options, and removes runs on abort", async () => {
    const dir = await freshDir();
    await expect(ShuffleWriter.create({ dir, numPartitions: 0 })).rejects.toBeInstanceOf(ZephyrError);
    await expect(ShuffleWriter.create({ dir, numPartitions: 2, tag: 300 })).rejects.toThrow(/tag/);
    expect(() => new ExternalMerge([], { tmpDir: dir, maxFanIn: 1 })).toThrow(/maxFanIn/);
    const w = await ShuffleWriter.create({ dir, numPartitions: 3, memoryBudgetBytes: 4096 });
    for (let i = 0; i < 500; i++) w.add(i, { i });
    const out = w.close();
    const sizes = partitionSizes(out.runs, 3);
    expect(sizes.records.reduce((a, b) => a + b)).toBe(500);
    expect(sizes.bytes.reduce((a, b) => a + b)).toBe(out.bytes);
    expect(() => segmentsOf(out.runs, 3)).toThrow(/partition 3/);
    const w2 = await ShuffleWriter.create({ dir, numPartitions: 3, memoryBudgetBytes: 4096, name: "gone" });
    for (let i = 0; i < 500; i++) w2.add(i, { i });
    w2.abort();
    expect((await readdir(dir)).filter((f) => f.startsWith("gone"))).toEqual([]);
  });

  it("merges many runs in several passes, removing intermediate runs, also when abandoned", async () => {
    const dir = await freshDir();
    const rows = Array.from({ length: 4000 }, (_, v) => ({ k: v % 101, v }));
    const runs = await scatter(rows, { dir, mappers: 2, partitions: 1, budget: 4096 });
    expect(runs.length).toBeGreaterThan(40);
    const merge = new ExternalMerge(segmentsOf(runs, 0), { tmpDir: dir, memoryBudgetBytes: 256 * 1024, maxFanIn: 3 });
    expect(merge.passes).toBeGreaterThanOrEqual(3);
    let count = 0;
    let prev = -1;
    for (let c = merge.next(); c !== undefined; c = merge.next()) {
      expect(c.hash).toBeGreaterThanOrEqual(prev);
      prev = c.hash;
      count++;
    }
    merge.close();
    expect(count).toBe(rows.length);
    const left = async () => (await readdir(dir)).filter((f) => f.startsWith("merge-"));
    expect(await left()).toEqual([]);
    // Abandoning the group walk half-way still closes files and deletes intermediate runs.
    for (const g of groupPartition<Row>(runs, 0, { tmpDir: dir, memoryBudgetBytes: 256 * 1024, maxFanIn: 3 })) {
      expect([...g.values].length).toBeGreaterThan(0);
      break;
    }
    expect(await left()).toEqual([]);
  });

  it("handles records larger than the read block and the write block", async () => {
    const dir = await freshDir();
    const big = (n: number, c: string) => c.repeat(n);
    const rows = [
      { k: "a", v: 0, pad: big(300_000, "x") },
      { k: "b", v: 1, pad: big(10, "y") },
      { k: "a", v: 2, pad: big(2_500_000, "z") },
      { k: "b", v: 3, pad: big(70_000, "w") },
    ];
    const runs = await scatter(rows, { dir, mappers: 2, partitions: 1, budget: 4096 });
    const all = new Map<unknown, (typeof rows)[number][]>();
    for (const g of groupPartition<(typeof rows)[number]>(runs, 0, { tmpDir: dir, memoryBudgetBytes: 256 * 1024, maxFanIn: 2 })) all.set(g.key, [...g.values]);
    expect(all.get("a")).toEqual([rows[0], rows[2]]);
    expect(all.get("b")).toEqual([rows[1], rows[3]]);
    expect(all.size).toBe(2);
  });

  it("reports a truncated spill run as an IO error naming the file", async () => {
    const dir = await freshDir();
    const rows = Array.from({ length: 200 }, (_, v) => ({ k: v, v }));
    const runs = await scatter(rows, { dir, mappers: 1, partitions: 1, budget: 1 << 20 });
    await truncate(runs[0].path, runs[0].offsets[1] - 5);
    const err = (() => {
      try {
        for (const g of groupPartition<Row>(runs, 0, mergeOpts(dir, 32))) for (const v of g.values) expect(v).toBeDefined();
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("IO");
    expect((err as ZephyrError).message).toContain(runs[0].path);
  });

  it("keeps distinct keys with equal hashes apart (groups compare the encoded key, not the hash)", async () => {
    const dir = await freshDir();
    // A hand-made run: three frames sharing one sort hash, sorted by key bytes as the writer would.
    const frame = (key: unknown, value: unknown): Buffer => handFrame(key, value, 42);
    const bytes = Buffer.concat([frame("a", 1), frame("a", 2), frame("b", 3)]);
    const runPath = path.join(dir, "hand.spill");
    await writeFile(runPath, bytes);
    const run: SpillRun = { path: runPath, offsets: [0, bytes.length], counts: [3] };
    const groups: [unknown, number[]][] = [];
    for (const g of groupPartition<number>([run], 0, mergeOpts(dir, 32))) groups.push([g.key, [...g.values]]);
    expect(groups).toEqual([
      ["a", [1, 2]],
      ["b", [3]],
    ]);
  });

  it("deduplicates arrival-order runs in memory by hash without merging keys whose hashes collide", async () => {
    const dir = await freshDir();
    const frame = (key: unknown, value: unknown): Buffer => handFrame(key, value, 7); // every key has the same sort hash
    const runs: SpillRun[] = [];
    for (const [i, frames] of [
      [frame("a", 1), frame("b", 2), frame("a", 3)],
      [frame("c", 4), frame("b", 5), frame("c", 6), frame("d", 7)],
    ].entries()) {
      const bytes = Buffer.concat(frames);
      const runPath = path.join(dir, `arrival-${i}.spill`);
      await writeFile(runPath, bytes);
      runs.push({ path: runPath, offsets: [0, bytes.length], counts: [frames.length], sorted: false });
    }
    expect([...dedupPartition<number>(runs, 0, mergeOpts(dir, 32))]).toEqual([1, 2, 4, 7]);
  });

  it("spills values as JSON text for a JSONL sink, and refuses records without a JSON form", async () => {
    const dir = await freshDir();
    const when = new Date(Date.UTC(2026, 10, 30));
    const records = [
      { id: 1, text: "naïve ＡＢＣ", at: when, nested: [1, { x: null }] },
      { id: 2, text: "dup" },
      { id: 3, text: "naïve ＡＢＣ" },
      { id: 4, text: "ok", gone: undefined, map: new Map([["k", 1]]) },
    ];
    const w = await ShuffleWriter.create({ dir, numPartitions: 2, sort: false, values: "json" });
    for (const r of records) w.add(r.text, r);
    const runs = w.close().runs;
    expect(runs.every((r) => r.values === "json")).toBe(true);
    const got: string[] = [];
    for (let p = 0; p < 2; p++) for (const b of dedupPartition<Uint8Array>(runs, p, mergeOpts(dir, 32))) got.push(Buffer.from(b).toString("utf8"));
    // The text is JSON.stringify of the record, as the inline backend writes it (a Map has no
    // JSON members), first record of each key.
    expect(got.sort()).toEqual([records[0], records[1], records[3]].map((r) => JSON.stringify(r)).sort());
    const bad = await ShuffleWriter.create({ dir, numPartitions: 1, values: "json" });
    expect(() => bad.add("k", { n: 1n })).toThrow(expect.objectContaining({ code: "BAD_RECORD" }));
    expect(() => bad.add("k", undefined)).toThrow(/no JSON form/);
    // A deduplicating writer does not count a record it refused as buffered.
    const dedup = await ShuffleWriter.create({ dir, numPartitions: 1, sort: false, dedup: true, values: "json" });
    expect(() => dedup.add("k", { n: 1n })).toThrow(expect.objectContaining({ code: "BAD_RECORD" }));
    expect([dedup.add("k", { n: 1 }), dedup.add("k", { n: 2 })]).toEqual([true, false]);
    expect(dedup.close().records).toBe(1);
    await expect(ShuffleWriter.create({ dir, numPartitions: 1, values: "xml" as "json" })).rejects.toThrow(/shuffle.values/);
    // Runs of one partition must agree on their encoding.
    const mixed = await scatter([{ k: "z", v: 1 }], { dir: await freshDir(), mappers: 1, partitions: 2, budget: 1 << 20, sort: false });
    expect(() => [...dedupPartition([...runs, ...mixed], 0, mergeOpts(dir, 32))]).toThrow(/mix msgpack and JSON/);
  });
});
