// trainLm as an iris module task on a LocalCluster: status reports, metrics, result.
import { LocalCluster } from "@marin/iris";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";
import type { TrainLmConfigInput } from "./trainerConfig.ts";

const trainLmModule = path.join(path.dirname(fileURLToPath(import.meta.url)), "trainLm.ts");

describe("trainLm as an iris task", () => {
  let cluster: LocalCluster;
  let dir: string;
  let config: TrainLmConfigInput;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-iris-"));
    await writeByteCache(path.join(dir, "cache"), syntheticDocuments(60, 5));
    await writeByteCache(path.join(dir, "val"), syntheticDocuments(10, 6));
    config = {
      model: { nLayers: 2, dModel: 32, nHeads: 4, seqLen: 16 },
      data: { trainCache: path.join(dir, "cache"), validationCache: path.join(dir, "val") },
      optimizer: { learningRate: 5e-3, warmup: 2 },
      trainer: {
        numTrainSteps: 12,
        batchSize: 4,
        stepsPerEval: 6,
        maxEvalBatches: 2,
        runDir: path.join(dir, "run"),
        trackers: ["jsonl"],
        statusIntervalSeconds: 0.05,
        backend: "wasm",
      },
    };
    cluster = await LocalCluster.start({ workers: 1 });
  });
  afterAll(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("reports status text and metrics that IrisClient.getTaskMetrics reads back", async () => {
    const job = await cluster.client.submit({
      name: "levanter-train",
      entrypoint: { module: trainLmModule, export: "trainLm", args: config },
      env: { LEVANTER_LOG: "warn" },
    });
    const status = await job.wait({ timeoutMs: 150_000 });
    expect(status.state, JSON.stringify(status)).toBe("SUCCEEDED");
    const { statusText, points } = await cluster.client.getTaskMetrics(status.tasks[0]!.taskId);
    expect(statusText).toMatch(/^step 12\/12 \(100\.0%\) · loss \d+\.\d{4}/);
    expect(points.length).toBeGreaterThanOrEqual(2);
    const last = points.at(-1)!;
    expect(last.step).toBe(12);
    // The last step evaluates, and the final (forced) report carries its eval metrics.
    for (const name of ["train/loss", "optim/learning_rate", "throughput/tokens_per_second", "throughput/mfu", "eval/loss", "eval/bpb"]) {
      expect(Number.isFinite(last.metrics[name]), name).toBe(true);
    }
    // The newest checkpoint (the dashboard's "last checkpoint"): training ends with one of its last step.
    expect(last.metrics["checkpoint/step"]).toBe(12);
    // Points come in step order, one per report.
    const steps = points.map((p) => p.step);
    expect([...steps].sort((a, b) => a - b)).toEqual(steps);
  });

  it("a failing run exits promptly with its error", async () => {
    // Promptly = well inside the bound, which is itself well inside the wait's own timeout, so a
    // slow failure fails this assertion rather than job.wait.
    const boundMs = 20_000;
    const t0 = Date.now();
    const job = await cluster.client.submit({
      name: "levanter-bad",
      entrypoint: { module: trainLmModule, export: "trainLm", args: { ...config, data: { trainCache: path.join(dir, "missing") } } },
      env: { LEVANTER_LOG: "warn" },
    });
    const status = await job.wait({ timeoutMs: 3 * boundMs });
    const elapsed = Date.now() - t0;
    console.log(`failing run reached ${status.state} in ${elapsed} ms`);
    expect(status.state).toBe("FAILED");
    expect(elapsed).toBeLessThan(boundMs);
    const lines: string[] = [];
    for await (const entry of job.logs()) lines.push(entry.line);
    expect(lines.join("\n")).toMatch(/token cache .*missing/);
  });
});
