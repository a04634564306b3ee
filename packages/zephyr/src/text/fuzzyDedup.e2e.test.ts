// dedupFuzzy and connected components on the iris backend (a real LocalCluster; every shard of
// every stage, each round of the components loop included, is a child process): the same records
// as inline.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { LocalCluster } from "@marin/iris";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { componentsOf, fuzzyDocs } from "../fixtures/fuzzyPipeline.ts";

let cluster: LocalCluster;
let dir: string;
beforeAll(async () => {
  cluster = await LocalCluster.start({ workers: 1, workerCpuMillis: 4000 });
  dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-fuzzy-iris-"));
});
afterAll(async () => {
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("dedupFuzzy on iris", () => {
  it("keeps the same records as inline, and components take their rounds as jobs", async () => {
    const args = { bases: 60, seed: 11, shards: 2 };
    const inline = await fuzzyDocs({ ...args, shards: 3 }).collect({ backend: "inline", withStats: true });
    const iris = await fuzzyDocs(args).collect({ backend: "iris", iris: { client: cluster.client, jobPrefix: "zfuzzy" }, withStats: true, scratchDir: path.join(dir, "s1") });
    const ids = (rs: { id: number }[]): number[] => rs.map((r) => r.id).sort((a, b) => a - b);
    expect(iris.stats.backend).toBe("iris");
    expect(ids(iris.records)).toEqual(ids(inline.records));
    expect(inline.stats.counters["dedupFuzzy.removed"]).toBeGreaterThan(0);
    expect(iris.stats.counters["dedupFuzzy.removed"]).toBe(inline.stats.counters["dedupFuzzy.removed"]);
    const edges: [number, number][] = [
      [4, 3],
      [3, 2],
      [2, 1],
      [8, 9],
    ];
    const cc = await componentsOf({ edges, shards: 2 }).collect({
      backend: "iris",
      iris: { client: cluster.client, jobPrefix: "zcc" },
      withStats: true,
      scratchDir: path.join(dir, "s2"),
    });
    expect(new Map(cc.records)).toEqual(
      new Map([
        [1, 1],
        [2, 1],
        [3, 1],
        [4, 1],
        [8, 8],
        [9, 8],
      ]),
    );
    const rounds = cc.stats.counters["components.rounds"];
    expect(rounds).toBeGreaterThanOrEqual(2);
    // One iris job per round of the loop stage.
    const loopJobs = (await cluster.client.list()).filter((j) => path.basename(j.name).startsWith("zcc-") && /-s2(r\d+)?$/.test(j.name));
    expect(loopJobs).toHaveLength(rounds);
  }, 600_000);
});
