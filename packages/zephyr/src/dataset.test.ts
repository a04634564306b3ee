// Dataset's sources, errors, sinks and skipExisting, through the public operations.
import { existsSync, readdirSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { Dataset, fromFiles, fromIterable, fromList, readJsonl, readParquet, readText } from "./dataset.ts";
import { ZephyrError } from "./errors.ts";
import { closeThreadPool } from "./exec/threads.ts";
import { setLevanterShardingLoader } from "./exec/tokenCache.ts";
import { numbers } from "./fixtures/numbersPipeline.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-ds-"));
});
afterEach(async () => {
  setLevanterShardingLoader(undefined);
  await rm(dir, { recursive: true, force: true });
});
afterAll(() => closeThreadPool());

const inline = { backend: "inline" } as const;

describe("sources", () => {
  it("fromList defaults to min(items, cores) shards and keeps order", async () => {
    const ds = fromList([5, 6, 7]);
    expect(ds.logical.source).toMatchObject({ kind: "list", shards: Math.min(3, os.availableParallelism()) });
    expect(fromList([]).logical.source).toMatchObject({ shards: 1 });
    expect(await ds.collect(inline)).toEqual([5, 6, 7]);
    expect(() => fromList([1], { shards: 0 })).toThrow(/positive integer/);
  });

  it("fromIterable streams sync and async iterables", async () => {
    expect(
      await fromIterable(new Set([1, 2, 3]))
        .map((x) => x * 10)
        .collect(inline),
    ).toEqual([10, 20, 30]);
    async function* gen(): AsyncGenerator<string> {
      yield "a";
      yield "b";
    }
    expect(await fromIterable(gen()).collect(inline)).toEqual(["a", "b"]);
    expect(() => fromIterable(3 as never)).toThrow(ZephyrError);
  });

  it("fromFiles, readText and readJsonl read one shard per file, compressed by extension", async () => {
    await writeFile(path.join(dir, "a.txt"), "one\ntwo\n");
    await writeFile(path.join(dir, "b.txt.gz"), gzipSync("three\n"));
    expect(await fromFiles(path.join(dir, "*.txt{,.gz}")).collect(inline)).toEqual([path.join(dir, "a.txt"), path.join(dir, "b.txt.gz")]);
    expect(await readText(path.join(dir, "*.txt{,.gz}")).collect(inline)).toEqual(["one", "two", "three"]);
    const w = await fromList([{ a: 1 }, { a: 2 }, { a: 3 }], { shards: 2 }).writeJsonl(path.join(dir, "j", "p-{shard}.jsonl.zst"), inline);
    expect(w.counts).toEqual([1, 2]);
    expect(
      await readJsonl<{ a: number }>(path.join(dir, "j", "*.jsonl.zst"))
        .map((r) => r.a)
        .collect(inline),
    ).toEqual([1, 2, 3]);
    await expect(readText(path.join(dir, "nothing-*.txt")).count(inline)).rejects.toThrow(/no files match/);
  });
});

describe("errors", () => {
  it("a malformed JSONL line fails with file and line, or is skipped and counted", async () => {
    const file = path.join(dir, "bad.jsonl.gz");
    await writeFile(file, gzipSync('{"x":1}\n{"x":2}\n{oops\n{"x":4}\nnot json either\n'));
    const err = await readJsonl(file)
      .collect(inline)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("BAD_RECORD");
    expect((err as Error).message).toContain(`${file}:3`);
    const { records, stats } = await readJsonl<{ x: number }>(file, { onBadRecord: "skip" }).collect({ ...inline, withStats: true });
    expect(records.map((r) => r.x)).toEqual([1, 2, 4]);
    expect(stats.counters.badRecords).toBe(2);
    expect(stats.stages[0].counters.bytesIn).toBe((await readFile(file)).length);
  });

  it("invalid UTF-8 is a bad record: fails with file and line, is skipped and counted, or is replaced on request", async () => {
    const file = path.join(dir, "latin1.jsonl.gz");
    // Line 2 is Latin-1, not UTF-8 ("café" with a lone 0xe9).
    await writeFile(file, gzipSync(Buffer.concat([Buffer.from('{"x":1,"t":"ok"}\n{"x":2,"t":"caf'), Buffer.from([0xe9]), Buffer.from('"}\n{"x":3,"t":"é"}\n')])));
    const err = await readJsonl(file)
      .collect(inline)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("BAD_RECORD");
    expect((err as Error).message).toBe(`${file}:2: invalid UTF-8`);
    const skipped = await readJsonl<{ x: number }>(file, { onBadRecord: "skip" }).collect({ ...inline, withStats: true });
    expect(skipped.records.map((r) => r.x)).toEqual([1, 3]);
    expect(skipped.stats.counters.badRecords).toBe(1);
    const replaced = await readJsonl<{ x: number; t: string }>(file, { invalidUtf8: "replace" }).collect(inline);
    expect(replaced.map((r) => r.t)).toEqual(["ok", "caf\uFFFD", "é"]);
    // The text reader follows the same policy.
    const txt = path.join(dir, "latin1.txt");
    await writeFile(txt, Buffer.concat([Buffer.from("one\ntw"), Buffer.from([0xf6]), Buffer.from("\nthree\n")]));
    await expect(readText(txt).collect(inline)).rejects.toThrow(`${txt}:2: invalid UTF-8`);
    const t = await readText(txt, { onBadRecord: "skip" }).collect({ ...inline, withStats: true });
    expect(t.records).toEqual(["one", "three"]);
    expect(t.stats.counters.badRecords).toBe(1);
    expect(() => readJsonl(file, { invalidUtf8: "ignore" as "replace" })).toThrow(/invalidUtf8: expected "badRecord" or "replace"/);
  });

  it("a multi-file run failing on its third file leaves no shard under its final name and no temp file", async () => {
    const input = path.join(dir, "in");
    await mkdir(input);
    for (const [i, body] of ['{"x":1}\n', '{"x":2}\n', '{"x":3}\n{oops\n', '{"x":4}\n'].entries()) await writeFile(path.join(input, `f${i}.jsonl`), body);
    const out = path.join(dir, "out");
    const err = await readJsonl<{ x: number }>(path.join(input, "*.jsonl"))
      .map((r) => r.x)
      .writeJsonl(path.join(out, "part-{shard}.jsonl"), inline)
      .catch((e: unknown) => e);
    expect((err as ZephyrError).code).toBe("BAD_RECORD");
    expect((err as Error).message).toContain("f2.jsonl:2");
    // Shards 0 and 1 had finished (inline runs shards in order): nothing of them is visible.
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
    // A run that succeeds afterwards publishes all of its shards, then _SUCCESS.
    await writeFile(path.join(input, "f2.jsonl"), '{"x":3}\n');
    const ok = await readJsonl<{ x: number }>(path.join(input, "*.jsonl"))
      .map((r) => r.x)
      .writeJsonl(path.join(out, "part-{shard}.jsonl"), inline);
    expect(ok.counts).toEqual([1, 1, 1, 1]);
    expect(readdirSync(out).sort()).toEqual([".zephyr", "_SUCCESS", "part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl", "part-00003.jsonl"]);
  });

  it("a user function that throws names the stage, the shard and the record's position", async () => {
    const ds = fromList(
      Array.from({ length: 20 }, (_, i) => i),
      { shards: 4 },
    )
      .filter((x) => x !== 0)
      .map((x) => {
        if (x === 13) throw new Error("thirteen");
        return x;
      });
    const err = await ds.collect(inline).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("USER_FUNCTION");
    // Shard 2 holds 10..14; 13 is the 4th record reaching the map (#3, counting from 0).
    expect((err as Error).message).toMatch(/^stage 0 \[.*\], shard 2 of 4: map \(operation 2 of the stage\) threw on record #3 of its input \(13\): thirteen$/);
    expect(((err as Error).cause as Error).message).toBe("thirteen");
    const red = await fromList([1, 2, 3], { shards: 1 })
      .groupBy(
        (x) => x % 2,
        () => {
          throw new Error("no");
        },
      )
      .collect(inline)
      .catch((e: unknown) => e);
    expect((red as Error).message).toMatch(/stage 1 .* shard 0 of 1: groupBy reducer threw on record #0/);
  });

  it("a throwing key function or mapShard names where it failed", async () => {
    const keyErr = await fromList(["a", "b", "c"], { shards: 1 })
      .deduplicate((s) => {
        if (s === "c") throw new Error("bad key");
        return s;
      })
      .collect(inline)
      .catch((e: unknown) => e);
    expect((keyErr as ZephyrError).code).toBe("USER_FUNCTION");
    expect((keyErr as Error).message).toMatch(/stage 0 .* shard 0 of 1: key function threw on record #2 of its input \("c"\): bad key/);
    const shardErr = await fromList([1, 2], { shards: 1 })
      .mapShard(async function* (rs) {
        for await (const r of rs) {
          if (r === 2) throw new Error("shard broke");
          yield r;
        }
      })
      .collect(inline)
      .catch((e: unknown) => e);
    expect((shardErr as Error).message).toMatch(/shard 0 of 1: mapShard \(operation 1 of the stage\) threw: shard broke/);
  });

  it("the iris backend without a cluster says how to give it one", async () => {
    const saved = process.env.IRIS_CONTROLLER_ADDRESS;
    delete process.env.IRIS_CONTROLLER_ADDRESS;
    try {
      await expect(numbers({ n: 3, shards: 1 }).count({ backend: "iris" })).rejects.toThrow(/iris backend needs a cluster: pass \{ iris: \{ client \} \}/);
    } finally {
      if (saved !== undefined) process.env.IRIS_CONTROLLER_ADDRESS = saved;
    }
  });

  it("parallel backends need definePipeline; plain plans run inline with a notice", async () => {
    const ds = fromList([1, 2, 3]);
    await expect(ds.count({ backend: "threads" })).rejects.toThrow(/definePipeline\(import\.meta\.url, build\)/);
    await expect(ds.count({ backend: "iris" })).rejects.toThrow(/definePipeline/);
    await expect(ds.count({ backend: "gpu" as never })).rejects.toThrow(/backend: expected/);
    expect((await ds.count({ withStats: true })).stats.backend).toBe("inline");
    const p = await numbers({ n: 30, shards: 3 }).collect({ withStats: true, threads: 2 });
    expect(p.stats.backend).toBe("threads");
    expect(p.records).toEqual(await numbers({ n: 30, shards: 3 }).collect(inline));
    // An operation added after the pipeline's build makes it a plain plan again.
    expect(numbers({ n: 3, shards: 1 }).map((x) => x).origin).toBeUndefined();
  });

  it("writeTokenCache without @marin/levanter says what to install", async () => {
    setLevanterShardingLoader(() => Promise.reject(Object.assign(new Error("Cannot find package '@marin/levanter'"), { code: "ERR_MODULE_NOT_FOUND" })));
    const err = await fromList([[1, 2]])
      .writeTokenCache(path.join(dir, "cache"), inline)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("MISSING_DEPENDENCY");
    expect((err as Error).message).toMatch(/install @marin\/levanter/);
    expect(existsSync(path.join(dir, "cache"))).toBe(false);
  });
});

describe("sinks", () => {
  it("writeTokenCache writes levanter's layout, readable by levanter", async () => {
    const docs = [[1, 2, 3], [4], [5, 6], [7, 8, 9, 10]];
    const r = await fromList(docs, { shards: 2 })
      .map((ids) => ({ ids }))
      .writeTokenCache(path.join(dir, "cache"), { ...inline, tokenizer: "test", vocabSize: 100 });
    expect(r.counts).toEqual([2, 2]);
    expect(path.basename(r.manifest)).toBe("ledger.json");
    const lev = await import("@marin/levanter/sharding");
    const ledger = await lev.readTokenCacheLedger(path.join(dir, "cache"));
    expect(ledger).toMatchObject({ tokenizer: "test", vocabSize: 100, totalDocuments: 4, totalTokens: 10, finished: true });
    // The same plan again: every shard is already committed.
    const again = await fromList(docs, { shards: 2 })
      .map((ids) => ({ ids }))
      .writeTokenCache(path.join(dir, "cache"), { ...inline, tokenizer: "test", vocabSize: 100, skipExisting: true });
    expect(again.counts).toEqual([2, 2]);
    expect(again.stats.stages).toEqual([]);
  });

  it("writeParquet round-trips, and a select/filter after readParquet is pushed into the reader", async () => {
    const rows = Array.from({ length: 50 }, (_, i) => ({ id: i, score: i / 50, lang: i % 3 === 0 ? "en" : "fr", text: `t${i}` }));
    const w = await fromList(rows, { shards: 2 }).writeParquet(path.join(dir, "pq", "part-{shard}.parquet"), inline);
    expect(w.counts).toEqual([25, 25]);
    const manifest = JSON.parse(await readFile(w.manifest, "utf8")) as { total: number };
    expect(manifest.total).toBe(50);
    const ds = readParquet<(typeof rows)[number]>(path.join(dir, "pq", "*.parquet"))
      .select("id", "lang")
      .filter({ lang: { $eq: "en" } })
      .map((r) => r.id);
    const plan = ds.plan();
    expect(plan.stages).toHaveLength(1);
    expect(plan.stages[0].ops.map((o) => o.kind)).toEqual(["map"]);
    expect(ds.explain()).toMatch(/readParquet\(.*columns=\[id,lang\], filter=\{"lang":\{"\$eq":"en"\}\}\) → map → sink/);
    expect(await ds.collect(inline)).toEqual(rows.filter((r) => r.lang === "en").map((r) => r.id));
    // A declarative filter elsewhere is evaluated record by record.
    expect(
      await fromList(rows)
        .filter({ score: { $gte: 0.9 } })
        .count(inline),
    ).toBe(5);
  });

  it("count, collect and writers report per-stage counters", async () => {
    const { count, stats } = await fromList(
      Array.from({ length: 100 }, (_, i) => i),
      { shards: 4 },
    )
      .filter((x, ctx) => {
        if (x % 10 === 0) ctx.counter("dropped");
        return x % 10 !== 0;
      })
      .deduplicate((x) => x % 7)
      .count({ ...inline, withStats: true });
    expect(count).toBe(7);
    expect(stats.counters).toEqual({ dropped: 10 });
    expect(stats.stages.map((s) => [s.counters.recordsIn, s.counters.recordsOut])).toEqual([
      [100, 90],
      [expect.any(Number), 7],
    ]);
    expect(stats.stages[0].counters.bytesOut).toBeGreaterThan(0);
    expect(stats.stages.every((s) => s.wallMs >= 0 && s.counters.timeMs >= 0)).toBe(true);
    const out = path.join(dir, "w");
    await mkdir(out);
    const w = await fromList(["x", "y"], { shards: 1 }).writeJsonl(path.join(out, "one.jsonl"), inline);
    expect(w.paths).toEqual([path.join(out, "one.jsonl")]);
    expect(await readFile(w.paths[0], "utf8")).toBe('"x"\n"y"\n');
    expect(w.stats.stages[0].counters.bytesOut).toBe(8);
    // A later run (without skipExisting) replaces an earlier run's output.
    const w2 = await fromList(["zz"], { shards: 1 }).writeJsonl(path.join(out, "one.jsonl"), inline);
    expect(await readFile(w2.paths[0], "utf8")).toBe('"zz"\n');
    expect(w2.counts).toEqual([1]);
    expect(JSON.parse(await readFile(path.join(out, "_SUCCESS"), "utf8"))).toMatchObject({ total: 1 });
  });
});

describe("skipExisting", () => {
  it("reuses only shards committed by the same plan; a changed plan's stale files are rewritten", async () => {
    const pattern = path.join(dir, "skip", "part-{shard}.jsonl");
    const first = await fromList([1, 2, 3, 4], { shards: 2 }).writeJsonl(pattern, inline);
    const again = await fromList([1, 2, 3, 4], { shards: 2 }).writeJsonl(pattern, { ...inline, skipExisting: true });
    expect(again.stats.stages).toEqual([]);
    expect(again.counts).toEqual(first.counts);
    // Other data, same paths: nothing of the first run may be taken as this run's output.
    const other = await fromList([10, 20, 30, 40, 50, 60], { shards: 2 }).writeJsonl(pattern, { ...inline, skipExisting: true });
    expect(other.counts).toEqual([3, 3]);
    expect(await readFile(other.paths[0], "utf8")).toBe("10\n20\n30\n");
    expect(JSON.parse(await readFile(other.manifest, "utf8"))).toMatchObject({ total: 6, fingerprint: other.stats.fingerprint });
    // A pipeline's arguments are part of what a committed shard was made from.
    const p1 = await numbers({ n: 30, shards: 1 }).writeJsonl(path.join(dir, "np", "out.jsonl"), inline);
    const p2 = await numbers({ n: 60, shards: 1 }).writeJsonl(path.join(dir, "np", "out.jsonl"), { ...inline, skipExisting: true });
    expect(p2.counts[0]).toBeGreaterThan(p1.counts[0]);
    expect((await readFile(p2.paths[0], "utf8")).trim().split("\n")).toHaveLength(p2.counts[0]);
  });

  it("a shard file that changed since it was committed is rewritten, not adopted", async () => {
    const pattern = path.join(dir, "chg", "part-{shard}.jsonl");
    const first = await fromList([1, 2, 3, 4], { shards: 2 }).writeJsonl(pattern, inline);
    await writeFile(first.paths[1], "99999\n"); // another size than the marker records
    const again = await fromList([1, 2, 3, 4], { shards: 2 }).writeJsonl(pattern, { ...inline, skipExisting: true });
    expect(again.stats.stages[0].skipped).toBe(1);
    expect(await readFile(again.paths[1], "utf8")).toBe("3\n4\n");
    expect(again.counts).toEqual([2, 2]);
    // Same size, other content (a later modification time): also rewritten.
    await writeFile(again.paths[0], "7\n8\n");
    await utimes(again.paths[0], new Date(), new Date(Date.now() + 10_000)); // even where mtimes are coarse
    const third = await fromList([1, 2, 3, 4], { shards: 2 }).writeJsonl(pattern, { ...inline, skipExisting: true });
    expect(third.stats.stages[0].skipped).toBe(1);
    expect(await readFile(third.paths[0], "utf8")).toBe("1\n2\n");
  });

  it("a plain plan whose function changed does not adopt the shards the old function wrote", async () => {
    const pattern = path.join(dir, "fn", "part-{shard}.jsonl");
    await fromList([1, 2, 3, 4], { shards: 2 })
      .map((x) => x * 2)
      .writeJsonl(pattern, inline);
    const changed = await fromList([1, 2, 3, 4], { shards: 2 })
      .map((x) => x * 3)
      .writeJsonl(pattern, { ...inline, skipExisting: true });
    expect(changed.stats.stages[0].skipped).toBe(0);
    expect(await readFile(changed.paths[0], "utf8")).toBe("3\n6\n");
    const same = await fromList([1, 2, 3, 4], { shards: 2 })
      .map((x) => x * 3)
      .writeJsonl(pattern, { ...inline, skipExisting: true });
    expect(same.stats.stages).toEqual([]);
  });
});

describe("shuffles under a small memory budget", () => {
  it("groupBy over data many times the budget spills and stays exact", async () => {
    const items = Array.from({ length: 20_000 }, (_, i) => ({ k: i % 97, pad: "p".repeat(150) + i }));
    const { records, stats } = await fromList(items, { shards: 3 })
      .groupBy(
        (r) => r.k,
        (k, rs) => ({ k: k as number, n: rs.length }),
      )
      .collect({ ...inline, memoryBudgetBytes: 256 * 1024, withStats: true });
    expect(stats.stages[0].counters.bytesOut).toBeGreaterThan(8 * 256 * 1024);
    const expected = new Map<number, number>();
    for (const it of items) expected.set(it.k, (expected.get(it.k) ?? 0) + 1);
    expect(new Map(records.map((r) => [r.k, r.n]))).toEqual(expected);
  });
});

describe("planner", () => {
  it("fuses per-record operations and cuts stages at shuffles, reshard, reduce and take", () => {
    const a = fromList([1, 2, 3]);
    const b = fromList([{ k: 1 }]);
    const ds = a
      .map((x) => ({ k: x }))
      .filter((r) => r.k > 0)
      .flatMap((r) => [r, r])
      .window(2)
      .flatMap((w) => w)
      .groupBy(
        (r) => r.k,
        (k, rs) => ({ k: k as number, n: rs.length }),
      )
      .join(b, (r) => r.k)
      .reshard(3)
      .map(([l]) => l.n)
      .reduce((x, y) => x + y)
      .take(1);
    const plan = ds.plan();
    expect(plan.stages.map((s) => s.name)).toEqual([
      "fromList(3 items, 2 shards) → map → filter → flatMap → window(2) → flatMap → scatter by key".replace("2 shards", `${Math.min(3, os.availableParallelism())} shards`),
      "fromList(1 items, 1 shards) → scatter by key",
      "groupBy(from stage 0) → scatter by key",
      "inner join(stage 2 ⋈ stage 1) → spill",
      "reshard(3, from stage 3) → map → reduce(per shard) → spill",
      "gather(from stage 4, reduce) → take(1) → spill",
      "gather(from stage 5) → take(1) → sink",
    ]);
    expect(plan.explain().split("\n")).toHaveLength(8);
    expect(plan.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(ds.plan().fingerprint).toBe(plan.fingerprint);
    expect(a.map((x) => x + 1).plan().fingerprint).not.toBe(a.filter((x) => x > 1).plan().fingerprint);
    expect(fromList([1, 2, 3]).plan().fingerprint).not.toBe(fromList([1, 2, 4]).plan().fingerprint);
  });

  it("is lazy and immutable", async () => {
    let calls = 0;
    const base = fromList([1, 2, 3]);
    const mapped = base.map((x) => {
      calls++;
      return x;
    });
    expect(calls).toBe(0);
    expect(mapped).not.toBe(base);
    expect(base.logical.ops).toHaveLength(0);
    expect(mapped).toBeInstanceOf(Dataset);
    await mapped.count(inline);
    expect(calls).toBe(3);
  });
});
