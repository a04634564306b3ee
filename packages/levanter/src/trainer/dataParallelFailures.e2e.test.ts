// Data-parallel trainLm when a rank is SIGKILLed mid-run: the survivor ends PEER_FAILED within
// the bound, iris reruns the gang, and the run ends with the bits of an uninterrupted one; a
// 2-rank run killed for good resumes on 1 rank to the same bits.
import { LocalCluster, type Job } from "@marin/iris";
import { waitFor } from "@marin/iris/testing";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";
import type { TrainRankArgs } from "../internal/fixtures/irisTasks.ts";
import type { TrainLmConfigInput } from "./trainerConfig.ts";

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), "../internal/fixtures/irisTasks.ts");
const BOUND_MS = 15_000;

function checkpointBytes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) if (name !== "metadata.json") out[name] = readFileSync(path.join(dir, name)).toString("base64");
  return out;
}

describe("data-parallel trainLm under a SIGKILL", () => {
  let cluster: LocalCluster;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-dpf-"));
    await writeByteCache(path.join(dir, "cache"), syntheticDocuments(80, 5));
    cluster = await LocalCluster.start({ workers: 5 });
  });
  afterAll(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const config = (runDir: string): TrainLmConfigInput => ({
    model: { nLayers: 1, dModel: 32, nHeads: 4, seqLen: 16 },
    data: { trainCache: path.join(dir, "cache") },
    optimizer: { learningRate: 5e-3, warmup: 2 },
    trainer: {
      numTrainSteps: 20,
      batchSize: 8,
      microBatches: 4,
      runDir,
      trackers: ["jsonl"],
      backend: "wasm",
      threads: 1,
      checkpointer: { saveIntervalSeconds: null, keep: [{ every: 5 }] },
    },
  });
  const submit = (name: string, ranks: number, maxRetries: number, pauseAfterStep?: number): Promise<Job> => {
    const outDir = path.join(dir, name);
    mkdirSync(outDir, { recursive: true });
    const args: TrainRankArgs = { config: config(path.join(outDir, "run")), outDir, ...(pauseAfterStep !== undefined ? { pauseAfterStep } : {}) };
    return cluster.client.submit({
      name,
      entrypoint: { module: fixtures, export: "trainRank", args },
      replicas: ranks,
      gang: ranks > 1,
      ports: ["dp"],
      maxRetriesFailure: maxRetries,
      resources: { cpuMillis: 100 },
      env: { LEVANTER_LOG: "warn" },
    });
  };
  // Waits for rank 0 to pause after step 10, then SIGKILLs rank 1's process; returns the kill time.
  const killRank1 = async (name: string): Promise<number> => {
    const outDir = path.join(dir, name);
    await waitFor(`${name} to pause`, () => existsSync(path.join(outDir, "paused")) && existsSync(path.join(outDir, "pid-1-1")), { timeoutMs: 120_000, intervalMs: 50 });
    process.kill(Number(readFileSync(path.join(outDir, "pid-1-1"), "utf8")), "SIGKILL");
    return Date.now();
  };
  const peerFailedWithinBound = async (name: string, killedAt: number) => {
    const file = path.join(dir, name, "error-0-1.json");
    await waitFor(`${name}'s rank 0 to fail`, () => existsSync(file), { timeoutMs: BOUND_MS + 5000, intervalMs: 50 });
    const err = JSON.parse(readFileSync(file, "utf8")) as { code: string; message: string; timeMs: number };
    expect(err.code, err.message).toBe("PEER_FAILED");
    expect(err.timeMs - killedAt).toBeLessThan(BOUND_MS);
    console.log(`${name}: rank 0 ended PEER_FAILED ${err.timeMs - killedAt} ms after the SIGKILL (${err.message})`);
  };

  it("iris reruns the gang, which resumes and ends byte-identical to an uninterrupted run; a killed 2-rank run resumes on 1 rank to the same bytes", async () => {
    const [reference, retried, abandoned] = await Promise.all([submit("reference", 1, 0), submit("retried", 2, 2, 10), submit("abandoned", 2, 0, 10)]);
    const [killedA, killedB] = await Promise.all([killRank1("retried"), killRank1("abandoned")]);
    await Promise.all([peerFailedWithinBound("retried", killedA), peerFailedWithinBound("abandoned", killedB)]);

    const [ref, again, gone] = await Promise.all([reference.wait({ timeoutMs: 120_000 }), retried.wait({ timeoutMs: 120_000 }), abandoned.wait({ timeoutMs: 60_000 })]);
    expect(ref.state, JSON.stringify(ref)).toBe("SUCCEEDED");
    expect(again.state, JSON.stringify(again)).toBe("SUCCEEDED");
    expect(gone.state).toBe("FAILED");
    const want = checkpointBytes(path.join(dir, "reference", "run", "checkpoints", "step-20"));
    // The rerun is attempt 2 of both ranks, and resumed from a checkpoint rank 0 wrote before.
    const rerun = JSON.parse(readFileSync(path.join(dir, "retried", "done-0-2.json"), "utf8")) as { resumedFrom: number | null };
    expect(rerun.resumedFrom).toBeGreaterThanOrEqual(5);
    expect(existsSync(path.join(dir, "retried", "done-1-2.json"))).toBe(true);
    expect(checkpointBytes(path.join(dir, "retried", "run", "checkpoints", "step-20"))).toEqual(want);

    // The abandoned 2-rank run, resumed by one rank.
    const single = await cluster.client.submit({
      name: "abandoned-on-1",
      entrypoint: {
        module: fixtures,
        export: "trainRank",
        args: { config: config(path.join(dir, "abandoned", "run")), outDir: path.join(dir, "abandoned") } satisfies TrainRankArgs,
      },
      resources: { cpuMillis: 100 },
      env: { LEVANTER_LOG: "warn" },
    });
    expect((await single.wait({ timeoutMs: 120_000 })).state).toBe("SUCCEEDED");
    const resumed = JSON.parse(readFileSync(path.join(dir, "abandoned", "done-0-1.json"), "utf8")) as { resumedFrom: number | null; world: number };
    expect(resumed).toMatchObject({ world: 1 });
    expect(resumed.resumedFrom).toBeGreaterThanOrEqual(5);
    expect(checkpointBytes(path.join(dir, "abandoned", "run", "checkpoints", "step-20"))).toEqual(want);
  });
});
