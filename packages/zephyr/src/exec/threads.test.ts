import { afterAll, describe, expect, it } from "vitest";
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
});
