// The threads backend: the shared pool's lifetime, how its workers start, and the JSON pass-through into a JSONL sink.
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { gunzipSync } from "node:zlib";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { waitFor } from "@marin/iris/testing";
import { ZephyrError } from "../errors.ts";
import { dedupDocs } from "../fixtures/dedupPipeline.ts";
import { failFast } from "../fixtures/failFastPipeline.ts";
import { numbers } from "../fixtures/numbersPipeline.ts";
import { Worker } from "node:worker_threads";
import { closeThreadPool, setThreadPoolIdleMs, threadPoolThreads, withWorkerHeapFlags, workerExecArgv } from "./threads.ts";

afterAll(async () => {
  setThreadPoolIdleMs(60_000);
  await closeThreadPool();
});

describe("the shared thread pool", () => {
  it("closes itself once idle, and a later run starts a new one", async () => {
    setThreadPoolIdleMs(300);
    const expected = await numbers({ n: 60, shards: 3 }).collect({ backend: "inline" });
    expect(await numbers({ n: 60, shards: 3 }).collect({ threads: 2 })).toEqual(expected);
    expect(threadPoolThreads()).toBe(2);
    expect(await waitFor("the idle pool to close", () => threadPoolThreads() === 0, { timeoutMs: 15_000 })).toBe(true);
    // A run after the pool closed starts a new one.
    expect(await numbers({ n: 60, shards: 3 }).collect({ threads: 2 })).toEqual(expected);
  });

  it("runs asking for different thread counts at the same time do not disturb each other", async () => {
    const expected = await numbers({ n: 90, shards: 3 }).collect({ backend: "inline" });
    const runs = await Promise.all([
      numbers({ n: 90, shards: 3 }).collect({ threads: 1, maxShardRetries: 0 }),
      numbers({ n: 90, shards: 3 }).collect({ threads: 2, maxShardRetries: 0 }),
    ]);
    expect(runs).toEqual([expected, expected]);
  });

  it("a failed run has no shard still running when it rejects, and starts no new one", async () => {
    const markerDir = await mkdtemp(path.join(os.tmpdir(), "zephyr-failfast-"));
    try {
      const err = await failFast({ n: 300_000, markerDir })
        .count({ threads: 2 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ZephyrError);
      expect((err as ZephyrError).code).toBe("USER_FUNCTION");
      // Shard 1 ran beside the failing shard 0 and was finished before the run rejected; shards 2
      // and 3 were never started.
      expect(existsSync(path.join(markerDir, "done-1"))).toBe(true);
      expect(existsSync(path.join(markerDir, "done-2"))).toBe(false);
      expect(existsSync(path.join(markerDir, "done-3"))).toBe(false);
    } finally {
      await rm(markerDir, { recursive: true, force: true });
    }
  });
});

describe("how pool workers start", () => {
  it("drop the parent's TypeScript loader flags (workers register one themselves) and keep every other flag", () => {
    const tsxLoader = "file:///repo/node_modules/.pnpm/tsx@4.23.15/node_modules/tsx/dist/loader.mjs";
    const parent = [
      "--require",
      "/repo/node_modules/tsx/dist/preflight.cjs",
      "--import",
      tsxLoader,
      "--import=tsx",
      "--import",
      "file:///repo/packages/iris/src/sourceLoader/register.mjs",
      "--import=@marin/iris/source-loader",
      "-r",
      "tsx/cjs",
      "--max-old-space-size=4000",
      "--import",
      "./setup.mjs",
      "--conditions=dev",
      "--loader",
      "ts-node/esm",
    ];
    expect(workerExecArgv(parent)).toEqual(["--max-old-space-size=4000", "--import", "./setup.mjs", "--conditions=dev", "--loader", "ts-node/esm"]);
    expect(workerExecArgv([])).toEqual([]);
  });

  it("start pool workers with a full-size young generation, and leave threads started later as V8 makes them", async () => {
    // The young generation's size shows what the heap flags were when the isolate was made.
    const code = `const v8 = require("node:v8"); require("node:worker_threads").parentPort.postMessage(v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size)`;
    const newSpace = (w: Worker): Promise<number> =>
      new Promise((resolve, reject) => {
        w.once("message", (m: number) => {
          resolve(m);
          void w.terminate();
        });
        w.once("error", reject);
      });
    const made: Worker[] = [];
    const pool = withWorkerHeapFlags(() => {
      made.push(new Worker(code, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 192 } }));
      return { threads: made };
    });
    const pooled = await newSpace(pool.threads[0]);
    const later = await newSpace(new Worker(code, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 192 } }));
    expect(pooled).toBeGreaterThanOrEqual(32 * 1024 * 1024);
    expect(later).toBeLessThan(pooled / 4);
  });
});

describe("deduplicate into a JSONL sink", () => {
  it("writes, through the JSON pass-through, exactly the files the inline backend writes", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-passthrough-"));
    try {
      const inline = await dedupDocs({ n: 3000, shards: 3 }).writeJsonl(path.join(dir, "inline", "part-{shard}.jsonl.gz"), { backend: "inline" });
      const threads = await dedupDocs({ n: 3000, shards: 3 }).writeJsonl(path.join(dir, "threads", "part-{shard}.jsonl.gz"), { threads: 2 });
      expect(threads.counts).toEqual(inline.counts);
      expect(threads.counts.reduce((a, b) => a + b, 0)).toBe(1000);
      for (const [i, p] of threads.paths.entries()) {
        const got = gunzipSync(await readFile(p)).toString("utf8");
        expect(got).toBe(gunzipSync(await readFile(inline.paths[i])).toString("utf8"));
      }
      const first = JSON.parse(
        gunzipSync(await readFile(threads.paths[0]))
          .toString("utf8")
          .split("\n")[0],
      ) as Record<string, unknown>;
      expect(Object.keys(first).sort()).toEqual(["at", "id", "tags", "text"]);
      expect(first.tags).toEqual({});
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
