// trainLm data parallel in real iris gangs on a LocalCluster: 1, 2, 3 and 4 ranks end with the
// same bits after 20 steps (through shared memory and over TCP), so do 2 ranks holding one
// micro-batch each and 1 rank accumulating both, and only rank 0 writes the run's outputs.
import { LocalCluster } from "@marin/iris";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";
import { submitTrainGang } from "./gangJob.ts";
import type { TrainLmConfigInput } from "./trainerConfig.ts";

// Every file of a checkpoint but metadata.json (which holds the save time), as bytes by name.
function checkpointBytes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) if (name !== "metadata.json") out[name] = readFileSync(path.join(dir, name)).toString("base64");
  return out;
}

describe("data-parallel trainLm in an iris gang", () => {
  let cluster: LocalCluster;
  let dir: string;
  let config: (runDir: string, microBatches?: number) => TrainLmConfigInput;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-dp-"));
    await writeByteCache(path.join(dir, "cache"), syntheticDocuments(80, 5));
    config = (runDir, microBatches = 12) => ({
      model: { nLayers: 1, dModel: 32, nHeads: 4, seqLen: 16 },
      data: { trainCache: path.join(dir, "cache") },
      optimizer: { learningRate: 5e-3, warmup: 2 },
      trainer: {
        numTrainSteps: 20,
        batchSize: 12,
        microBatches,
        runDir,
        trackers: ["jsonl"],
        backend: "wasm",
        threads: 1,
        statusIntervalSeconds: 0.2,
        checkpointer: { saveIntervalSeconds: null, keep: [{ every: 10 }] },
      },
    });
    cluster = await LocalCluster.start({ workers: 13 });
  });
  afterAll(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("1, 2, 3 and 4 ranks give bitwise-identical parameters and optimizer state after 20 steps; so do 2 ranks with one micro-batch each and 1 rank accumulating two", async () => {
    // All six runs at once (13 ranks on 13 workers): their start-ups overlap.
    const t0 = Date.now();
    const jobs = await Promise.all(
      // The 3-rank gang exchanges over TCP only (the path between hosts), the others through shared memory.
      [1, 2, 3, 4].map((ranks) =>
        submitTrainGang(cluster.client, config(path.join(dir, `run-${ranks}`)), ranks, {
          name: `dp-${ranks}`,
          maxRetries: 0,
          cpuMillis: 100,
          env: { LEVANTER_LOG: "warn", ...(ranks === 3 ? { LEVANTER_DP_SHM: "off" } : {}) },
        }),
      ),
    );
    // One micro-batch per rank (each sends its float32 gradient) against accumulation on one rank.
    const perRank = await Promise.all(
      [1, 2].map((ranks) =>
        submitTrainGang(cluster.client, config(path.join(dir, `mb2-${ranks}`), 2), ranks, {
          name: `dp-mb2-${ranks}`,
          maxRetries: 0,
          cpuMillis: 100,
          env: { LEVANTER_LOG: "warn" },
        }),
      ),
    );
    const statuses = await Promise.all(jobs.map((j) => j.wait({ timeoutMs: 150_000 })));
    for (const st of await Promise.all(perRank.map((j) => j.wait({ timeoutMs: 150_000 })))) expect(st.state, JSON.stringify(st)).toBe("SUCCEEDED");
    expect(checkpointBytes(path.join(dir, "mb2-2", "checkpoints", "step-20"))).toEqual(checkpointBytes(path.join(dir, "mb2-1", "checkpoints", "step-20")));
    console.log(`1, 2, 3 and 4 ranks together: ${Date.now() - t0} ms`);
    for (const st of statuses) expect(st.state, JSON.stringify(st)).toBe("SUCCEEDED");
    const finals = [1, 2, 3, 4].map((ranks) => checkpointBytes(path.join(dir, `run-${ranks}`, "checkpoints", "step-20")));
    for (const ranks of [1, 2, 3, 4]) {
      // Rank 0 alone writes, in the one-rank layout: one metrics line per step.
      const lines = readFileSync(path.join(dir, `run-${ranks}`, "metrics.jsonl"), "utf8")
        .trim()
        .split("\n");
      expect(lines).toHaveLength(20);
      // Several ranks: where rank 0's step went (forward/backward, waiting, all-reduce).
      const last = JSON.parse(lines.at(-1)!) as { metrics?: Record<string, number> } & Record<string, number>;
      const m = last.metrics ?? last;
      if (ranks === 1) expect(m["parallel/reduce_seconds"]).toBeUndefined();
      else for (const k of ["compute", "wait", "reduce"]) expect(m[`parallel/${k}_seconds`], `${ranks} ranks: parallel/${k}_seconds`).toBeGreaterThanOrEqual(0);
    }
    const [job, status] = [jobs[1]!, statuses[1]!];
    const { statusText, points } = await cluster.client.getTaskMetrics(status.tasks[0]!.taskId);
    expect(statusText).toMatch(/^step 20\/20 \(100\.0%\) · loss \d+\.\d{4}/);
    expect(points.at(-1)!.metrics["throughput/tokens_per_second"]).toBeGreaterThan(0);
    // Rank 1 reports nothing; its log lines carry its rank.
    expect((await cluster.client.getTaskMetrics(status.tasks[1]!.taskId)).points).toHaveLength(0);
    const logs: string[] = [];
    for await (const e of job.logs()) if (e.taskIndex === 1) logs.push(e.line);
    expect(logs.filter((l) => l.startsWith("{")).every((l) => (JSON.parse(l) as { rank?: number }).rank === 1)).toBe(true);
    expect(Object.keys(finals[0]!).length).toBeGreaterThan(0);
    for (const f of finals.slice(1)) expect(f).toEqual(finals[0]);
    expect(existsSync(path.join(dir, "run-1", "checkpoints", "step-10"))).toBe(true);
  });
});
