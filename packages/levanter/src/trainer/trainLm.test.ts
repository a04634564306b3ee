import * as tf from "@tensorflow/tfjs";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readCheckpointMetadata } from "../checkpoint/checkpointStore.ts";
import { LevanterError } from "../errors.ts";
import { syntheticDocuments, unigramEntropy, writeByteCache } from "../internal/testCorpus.ts";
import { TokenCacheReader } from "../sharding/tokenCacheReader.ts";
import { trainLm } from "./trainLm.ts";
import type { TrainLmConfigInput } from "./trainerConfig.ts";

describe("trainLm", () => {
  let dir: string;
  let config: TrainLmConfigInput;
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-train-"));
    await writeByteCache(path.join(dir, "train"), syntheticDocuments(300, 1));
    await writeByteCache(path.join(dir, "val"), syntheticDocuments(20, 2));
    config = {
      model: { nLayers: 2, dModel: 32, nHeads: 4, seqLen: 32 },
      data: { trainCache: path.join(dir, "train"), validationCache: path.join(dir, "val") },
      optimizer: { learningRate: 1e-2, warmup: 3, weightDecay: 0.01, minLrRatio: 0.1 },
      trainer: { numTrainSteps: 60, batchSize: 8, stepsPerEval: 30, maxEvalBatches: 4, runDir: path.join(dir, "run"), trackers: ["jsonl", "tensorboard"], backend: "wasm" },
    };
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("a 2-layer model's loss falls clearly below the unigram entropy, with flat tensor count", async () => {
    const train = await TokenCacheReader.open(path.join(dir, "train"));
    const entropy = unigramEntropy(train.read(0, train.numTokens));
    train.close();
    const tensorCounts: number[] = [];
    const result = await trainLm(config, { hooks: [{ every: 10, fn: (i) => void (i.final || tensorCounts.push(tf.memory().numTensors)) }] });
    expect(result.step).toBe(60);
    expect(result.stoppedEarly).toBe(false);
    expect(result.eval!.loss).toBeLessThan(0.8 * entropy);
    expect(result.finalLoss!).toBeLessThan(0.8 * entropy);
    // Steps 20…60 hold exactly as many tensors as step 10 (eval at 30 included): nothing leaks.
    expect(new Set(tensorCounts).size).toBe(1);
    expect(tensorCounts).toHaveLength(6);

    const lines = readFileSync(path.join(dir, "run", "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, number>);
    expect(lines).toHaveLength(60);
    for (const name of ["train/loss", "optim/learning_rate", "throughput/tokens_per_second", "throughput/mfu"]) expect(lines[0]).toHaveProperty(name);
    expect(lines[29]).toHaveProperty("eval/loss");
    expect(lines[28]).not.toHaveProperty("eval/loss");
    // Byte tokens are one byte each, except EOS (none): bits per byte is a little above loss in bits.
    const bits = lines[59]!["eval/loss"]! / Math.LN2;
    expect(lines[59]!["eval/bpb"]).toBeGreaterThan(bits);
    expect(lines[59]!["eval/bpb"]).toBeLessThan(1.05 * bits);
    expect(readdirSync(path.join(dir, "run", "tensorboard"))).toHaveLength(1);
    // Training ends with a permanent checkpoint of its last step.
    const meta = await readCheckpointMetadata(path.join(dir, "run", "checkpoints", "step-60"));
    expect(meta).toMatchObject({ step: 60, isTemporary: false });
  });

  it("resuming a finished run trains no further and keeps its final checkpoint", async () => {
    const result = await trainLm(config);
    expect(result).toMatchObject({ step: 60, resumedFrom: 60, stoppedEarly: false });
    expect(existsSync(path.join(dir, "run", "checkpoints", "step-60", "metadata.json"))).toBe(true);
  });

  it("stops with NON_FINITE_LOSS before applying a NaN update", async () => {
    const runDir = path.join(dir, "nan");
    const poison = {
      every: 2,
      fn: (i: { step: number; model: { params: Map<string, tf.Variable> } }) => {
        if (i.step === 2) i.model.params.get("embed/tokens")!.assign(tf.fill([257, 32], Number.NaN));
      },
    };
    const run = trainLm({ ...config, trainer: { ...config.trainer, numTrainSteps: 6, runDir } }, { hooks: [poison] });
    await expect(run).rejects.toMatchObject({ code: "NON_FINITE_LOSS", message: expect.stringMatching(/train\/loss is NaN at step 2/) });
  });

  it("rejects a bad field, naming its path", async () => {
    await expect(trainLm({ ...config, trainer: { ...config.trainer, numTrainSteps: -3 } })).rejects.toThrow(/trainer\.numTrainSteps: .*got -3/);
    await expect(trainLm({ ...config, model: { ...config.model, nHeads: 5 } } as TrainLmConfigInput)).rejects.toThrow(LevanterError);
    // Far beyond wasm's 4 GiB heap: refused up front, naming the knob.
    await expect(trainLm({ ...config, model: { ...config.model, dModel: 4096, nLayers: 24, nHeads: 32 } })).rejects.toThrow(/wasm.*microBatchSize/);
  });
});
