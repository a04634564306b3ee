// Outputs on the threads backend with real worker threads: exactly-once files under crashes, skipExisting, fingerprint checks.
import { existsSync, readdirSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { ZephyrError } from "../errors.ts";
import { crashPipeline, unstablePipeline } from "../fixtures/crashPipeline.ts";
import { doubledJsonl } from "../fixtures/jsonlPipeline.ts";
import { numbers } from "../fixtures/numbersPipeline.ts";
import { readJsonl } from "../index.ts";
import { closeThreadPool } from "./threads.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-out-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});
afterAll(() => closeThreadPool());

function visibleFiles(d: string): string[] {
  return readdirSync(d).filter((n) => !n.startsWith("."));
}

describe("outputs on the threads backend", () => {
  it("a worker that dies mid-shard is retried and every record is written exactly once", async () => {
    const markerDir = path.join(dir, "markers");
    await import("node:fs/promises").then((fs) => fs.mkdir(markerDir));
    const out = path.join(dir, "out");
    const r = await crashPipeline({ n: 4000, shards: 4, crashShard: 2, crashAt: 700, markerDir }).writeJsonl(path.join(out, "part-{shard}-of-{total}.jsonl.gz"), { threads: 2 });
    expect(existsSync(path.join(markerDir, "crashed-2"))).toBe(true);
    expect(r.stats.stages[0].retries).toBe(1);
    expect(r.counts).toEqual([1000, 1000, 1000, 1000]);
    const ids: number[] = [];
    for (const p of r.paths) {
      for (const line of gunzipSync(await readFile(p))
        .toString("utf8")
        .split("\n"))
        if (line) ids.push((JSON.parse(line) as { id: number }).id);
    }
    expect(ids.sort((a, b) => a - b)).toEqual(Array.from({ length: 4000 }, (_, i) => i));
    // Only the committed files and the manifest are visible; temp files of the dead attempt are gone.
    expect(visibleFiles(out).sort()).toEqual(["_SUCCESS", ...r.paths.map((p) => path.basename(p))].sort());
    expect(readdirSync(out).filter((n) => n.includes(".tmp-"))).toEqual([]);
    const manifest = JSON.parse(await readFile(path.join(out, "_SUCCESS"), "utf8")) as { total: number; shards: { path: string; count: number }[] };
    expect(manifest.total).toBe(4000);
    expect(manifest.shards.map((s) => s.path)).toEqual([
      "part-00000-of-00004.jsonl.gz",
      "part-00001-of-00004.jsonl.gz",
      "part-00002-of-00004.jsonl.gz",
      "part-00003-of-00004.jsonl.gz",
    ]);
    // Read back through zephyr.
    expect(await readJsonl(path.join(out, "*.jsonl.gz")).count({ backend: "inline" })).toBe(4000);
  });

  it("with maxShardRetries 0 a crash fails the run naming the stage and shard", async () => {
    const markerDir = path.join(dir, "m2");
    await import("node:fs/promises").then((fs) => fs.mkdir(markerDir));
    const err = await crashPipeline({ n: 400, shards: 2, crashShard: 1, crashAt: 10, markerDir })
      .writeJsonl(path.join(dir, "o", "p-{shard}.jsonl"), { threads: 2, maxShardRetries: 0 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("SHARD_FAILED");
    expect((err as Error).message).toMatch(/stage 0 .* shard 1 of 2 failed after 1 attempt/);
    expect(existsSync(path.join(dir, "o", "_SUCCESS"))).toBe(false);
  });

  it("a run failing on its third file publishes no shard and leaves no temp file", async () => {
    const input = path.join(dir, "in");
    await mkdir(input);
    // Small good files first; the third fails at once (BAD_RECORD is not retried).
    for (const [i, body] of ['{"x":1}\n', '{"x":2}\n', "{oops\n", '{"x":4}\n'].entries()) await writeFile(path.join(input, `f${i}.jsonl`), body);
    const out = path.join(dir, "out-fail");
    const err = await doubledJsonl({ glob: path.join(input, "*.jsonl") })
      .writeJsonl(path.join(out, "part-{shard}.jsonl.gz"), { threads: 2 })
      .catch((e: unknown) => e);
    expect((err as ZephyrError).code).toBe("BAD_RECORD");
    expect((err as Error).message).toContain("f2.jsonl:1");
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  });

  it("skipExisting reruns only the shards that are not committed", async () => {
    const pattern = path.join(dir, "nums-{shard}.jsonl");
    const first = await numbers({ n: 300, shards: 3 }).writeJsonl(pattern, { threads: 2 });
    // Lose one shard; rewrite another in place (a later modification time: no longer taken as
    // committed, even with the same bytes, since a same-size edit looks the same).
    await rm(first.paths[1]);
    const before = await readFile(first.paths[0], "utf8");
    const third = await readFile(first.paths[2], "utf8");
    await writeFile(first.paths[2], third);
    await utimes(first.paths[2], new Date(), new Date(Date.now() + 10_000));
    const again = await numbers({ n: 300, shards: 3 }).writeJsonl(pattern, { threads: 2, skipExisting: true });
    expect(again.paths).toEqual(first.paths);
    expect(again.counts).toEqual(first.counts);
    expect(again.stats.stages[0].skipped).toBe(1);
    expect(await readFile(first.paths[0], "utf8")).toBe(before);
    expect(existsSync(first.paths[1])).toBe(true);
    expect(await readFile(first.paths[2], "utf8")).toBe(third);
  });

  it("a worker whose rebuilt plan differs refuses to run", async () => {
    const err = await unstablePipeline()
      .collect({ threads: 2 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("FINGERPRINT_MISMATCH");
    expect((err as Error).message).toMatch(/refusing to run/);
  });
});
