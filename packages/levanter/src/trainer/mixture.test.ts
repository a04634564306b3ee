// trainLm on a data.mixture: per-source evaluation, bitwise resume, 1 rank = 2 ranks, config errors.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Distributed } from "../parallel/distributed.ts";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";
import { localGangs } from "../internal/testGang.ts";
import { allGatherJson } from "../parallel/collectives.ts";
import { trainLm } from "./trainLm.ts";
import { parseTrainLmConfig, type TrainLmConfigInput } from "./trainerConfig.ts";

// Every file of a checkpoint but metadata.json (which holds the save time), as bytes by name.
function checkpointBytes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) if (name !== "metadata.json") out[name] = readFileSync(path.join(dir, name)).toString("base64");
  return out;
}

describe("trainLm with data.mixture", () => {
  let dir: string;
  let config: (runDir: string, extra?: { microBatches?: number }) => TrainLmConfigInput;
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-mix-"));
    await writeByteCache(path.join(dir, "a"), syntheticDocuments(60, 1));
    await writeByteCache(path.join(dir, "a-val"), syntheticDocuments(6, 2));
    // Another "source": the same kind of text, upper-cased.
    await writeByteCache(
      path.join(dir, "b"),
      syntheticDocuments(60, 3).map((d) => d.toUpperCase()),
    );
    config = (runDir, extra = {}) => ({
      model: { nLayers: 1, dModel: 16, nHeads: 2, seqLen: 16 },
      data: {
        mixture: {
          sources: [
            { name: "lower", trainCache: path.join(dir, "a"), validationCache: path.join(dir, "a-val"), weight: 3 },
            { name: "upper", trainCache: path.join(dir, "b"), weight: 1 },
          ],
          weightsAt: [{ step: 4, weights: { lower: 1, upper: 1 } }],
        },
      },
      optimizer: { learningRate: 1e-2, warmup: 2 },
      trainer: {
        numTrainSteps: 8,
        batchSize: 8,
        microBatches: 2,
        stepsPerEval: 4,
        maxEvalBatches: 2,
        runDir,
        trackers: ["jsonl"],
        backend: "wasm",
        threads: 1,
        checkpointer: { saveIntervalSeconds: null },
        ...extra,
      },
    });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("trains, evaluates each source with a validation cache, and a resume after a stop is bitwise the uninterrupted run", async () => {
    const straight = await trainLm(config(path.join(dir, "straight")));
    expect(straight.step).toBe(8);
    expect(straight.evalBySource?.lower?.bpb).toBeGreaterThan(0);
    expect(Object.keys(straight.evalBySource ?? {})).toEqual(["lower"]);
    const lines = readFileSync(path.join(dir, "straight", "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, number>);
    expect(lines[3]).toHaveProperty("eval/lower/bpb");
    expect(lines[3]).toHaveProperty("eval/lower/loss");
    expect(lines[3]).not.toHaveProperty("eval/upper/bpb");

    const stop = new AbortController();
    const first = await trainLm(config(path.join(dir, "resumed")), { signal: stop.signal, hooks: [{ every: 3, fn: (i) => void (i.step === 3 && stop.abort()) }] });
    expect(first).toMatchObject({ step: 3, stoppedEarly: true });
    const second = await trainLm(config(path.join(dir, "resumed")));
    expect(second).toMatchObject({ step: 8, resumedFrom: 3 });
    expect(checkpointBytes(path.join(dir, "resumed", "checkpoints", "step-8"))).toEqual(checkpointBytes(path.join(dir, "straight", "checkpoints", "step-8")));
  });

  it("2 data-parallel ranks end with one rank's bits", async () => {
    const one = path.join(dir, "one");
    await trainLm(config(one));
    const gangs = await localGangs(2);
    const two = path.join(dir, "two");
    const dists: Distributed[] = gangs.map((gang, rank) => ({
      rank,
      world: 2,
      coordinatorAddress: undefined,
      gang,
      allGather: (v) => allGatherJson(gang, v),
      close: () => gang.close(),
    }));
    try {
      const results = await Promise.all(dists.map((d) => trainLm(config(two), { distributed: d })));
      expect(results.map((r) => r.step)).toEqual([8, 8]);
    } finally {
      await Promise.all(dists.map((d) => d.close()));
    }
    expect(checkpointBytes(path.join(two, "checkpoints", "step-8"))).toEqual(checkpointBytes(path.join(one, "checkpoints", "step-8")));
  });

  it("takes data.trainCache or data.mixture, not both or neither, and names bad mixture fields", () => {
    const base = config(path.join(dir, "x"));
    const data = base.data as { mixture: unknown };
    expect(() => parseTrainLmConfig({ ...base, data: { ...data, trainCache: path.join(dir, "a") } })).toThrow(/data\.trainCache: set data\.trainCache or data\.mixture/);
    expect(() => parseTrainLmConfig({ ...base, data: {} })).toThrow(/one or the other/);
    expect(() => parseTrainLmConfig({ ...base, data: { mixture: { sources: [{ name: "a", trainCache: "x", weight: 0 }] } } })).toThrow(
      /data\.mixture\.sources: the weights sum to 0/,
    );
    expect(() => parseTrainLmConfig({ ...base, data: { mixture: { sources: [{ name: "a", trainCache: "x", weight: 1 }], weightsAt: [{ step: 2, weights: { b: 1 } }] } } })).toThrow(
      /data\.mixture\.weightsAt\.0\.weights\.b: no source is named "b"/,
    );
    expect(() => parseTrainLmConfig({ ...base, data: { mixture: { sources: [{ name: "a b", trainCache: "x", weight: 1 }] } } })).toThrow(/data\.mixture\.sources\.0\.name/);
  });
});
