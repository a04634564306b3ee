import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ZephyrError } from "../errors.ts";
import { failFast } from "../fixtures/failFastPipeline.ts";
import { numbers } from "../fixtures/numbersPipeline.ts";
import { closeThreadPool, setThreadPoolIdleMs, threadPoolThreads } from "./threads.ts";

afterAll(async () => {
  setThreadPoolIdleMs(60_000);
  await closeThreadPool();
});

/** Polls `cond` until it holds or `ms` pass. */
async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

describe("the shared thread pool", () => {
  it("closes itself once idle, and a later run starts a new one", async () => {
    setThreadPoolIdleMs(300);
    const expected = await numbers({ n: 60, shards: 3 }).collect({ backend: "inline" });
    expect(await numbers({ n: 60, shards: 3 }).collect({ threads: 2 })).toEqual(expected);
    expect(threadPoolThreads()).toBe(2);
    expect(await until(() => threadPoolThreads() === 0, 15_000)).toBe(true);
    // A run after the pool closed starts a new one.
    expect(await numbers({ n: 60, shards: 3 }).collect({ threads: 2 })).toEqual(expected);
  });

  it("runs asking for different thread counts at the same time do not disturb each other", async () => {
    const expected = await numbers({ n: 90, shards: 3 }).collect({ backend: "inline" });
    const runs = await Promise.all([numbers({ n: 90, shards: 3 }).collect({ threads: 1, maxShardRetries: 0 }), numbers({ n: 90, shards: 3 }).collect({ threads: 2, maxShardRetries: 0 })]);
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
