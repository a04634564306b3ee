// initializeDistributed across real iris gang tasks.
import { LocalCluster } from "@marin/iris";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initializeDistributed } from "./distributed.ts";

const here = path.dirname(fileURLToPath(import.meta.url));

describe("initializeDistributed", () => {
  let cluster: LocalCluster;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-dist-"));
    cluster = await LocalCluster.start({ workers: 2 });
  });
  afterAll(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("outside iris: a single process of rank 0", async () => {
    const d = await initializeDistributed();
    expect(d).toMatchObject({ rank: 0, world: 1, coordinatorAddress: undefined });
    expect(await d.allGather(7)).toEqual([7]);
  });

  it("a 2-task gang on a LocalCluster finds its coordinator and exchanges a message", async () => {
    const job = await cluster.client.submit({
      name: "levanter-gather",
      entrypoint: { module: path.join(here, "../internal/fixtures/irisTasks.ts"), export: "gatherProbe", args: { outDir: dir } },
      replicas: 2,
      gang: true,
      resources: { cpuMillis: 500 },
      env: { LEVANTER_LOG: "warn" },
    });
    const status = await job.wait({ timeoutMs: 120_000 });
    expect(status.state, JSON.stringify(status)).toBe("SUCCEEDED");
    const results = [0, 1].map((r) => JSON.parse(readFileSync(path.join(dir, `rank-${r}.json`), "utf8")) as { rank: number; world: number; all: string[]; coordinator: string });
    for (const [r, res] of results.entries()) {
      expect(res).toMatchObject({ rank: r, world: 2, all: ["hello from rank 0", "hello from rank 1"] });
    }
    // Rank 1 reached rank 0 at the address rank 0 registered.
    expect(results[1]!.coordinator).toBe(results[0]!.coordinator);
    expect(results[0]!.coordinator).toMatch(/:\d+$/);
  });
});
