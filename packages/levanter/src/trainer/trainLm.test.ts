// trainLm end to end in-process: loss falls, checkpoints, exact resume.
import { tf } from "../tf.ts";
import { getEventListeners } from "node:events";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readCheckpointMetadata } from "../checkpoint/checkpointStore.ts";
import { LevanterError } from "../errors.ts";
import { syntheticDocuments, unigramEntropy, writeByteCache } from "../internal/testCorpus.ts";
import { TokenCacheReader } from "../sharding/tokenCacheReader.ts";
import type { TransformerLm } from "../models/transformer.ts";
import type { AdamW, AdamWScalars } from "../optim/adamw.ts";
import { trainLm, type TrainHook } from "./trainLm.ts";
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

    const lines = readFileSync(path.join(dir, "run", "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, number>);
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

  // Every parameter and optimizer array as raw bytes (NaN-safe, bitwise), plus Adam's scalars.
  const snapshot = (model: TransformerLm, optimizer: AdamW) => {
    const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString("base64");
    const params = Object.fromEntries([...model.params].map(([n, v]) => [n, bytes(v.dataSync() as Float32Array)]));
    const { arrays, scalars } = optimizer.state();
    return { params, optimizer: Object.fromEntries([...arrays].map(([n, a]) => [n, bytes(a)])), scalars };
  };
  type Snapshot = ReturnType<typeof snapshot>;
  // Poisons the loss path (not the parameters) from the hook call at `from` on: "loss" makes the
  // loss and every gradient NaN; "grad" keeps the loss finite but makes the gradients infinite.
  const poisonLoss = (model: TransformerLm, kind: "loss" | "grad") => {
    const original = model.loss.bind(model);
    const infGrad = tf.customGrad((...args) => ({ value: (args[0] as tf.Tensor).clone(), gradFunc: (dy: tf.Tensor) => dy.mul(Number.POSITIVE_INFINITY) }));
    model.loss = (x, y) => (kind === "loss" ? original(x, y).mul(Number.NaN) : (infGrad(original(x, y)) as tf.Scalar));
    return () => void (model.loss = original);
  };

  for (const kind of ["loss", "grad"] as const) {
    it(`crashOnNonFinite: a non-finite ${kind} stops with NON_FINITE_LOSS and leaves parameters and optimizer bitwise unchanged`, async () => {
      let before: Snapshot | undefined;
      let after: Snapshot | undefined;
      const hook: TrainHook = {
        every: 1,
        fn: ({ step, model, optimizer }) => {
          if (step !== 2) return;
          before = snapshot(model, optimizer);
          poisonLoss(model, kind);
          // The trainer disposes both when it throws: read their state at that moment.
          const disposeModel = model.dispose.bind(model);
          model.dispose = () => {
            after = snapshot(model, optimizer);
            disposeModel();
          };
        },
      };
      const runDir = path.join(dir, `nan-crash-${kind}`);
      const run = trainLm({ ...config, trainer: { ...config.trainer, numTrainSteps: 6, runDir } }, { hooks: [hook] });
      const message = kind === "loss" ? /train\/loss is NaN and optim\/grad_norm is NaN at step 2;/ : /train\/loss is \d+\.\d+ and optim\/grad_norm is (NaN|Infinity) at step 2;/;
      await expect(run).rejects.toMatchObject({ code: "NON_FINITE_LOSS", message: expect.stringMatching(message) });
      expect(before!.scalars.step).toBe(2);
      expect(after).toEqual(before);
    });
  }

  it("crashOnNonFinite: false skips non-finite steps (state bitwise unchanged), counts them, then trains on", async () => {
    let poisoned: Snapshot | undefined;
    let whileSkipping: Snapshot | undefined;
    let restore: (() => void) | undefined;
    let finalScalars: AdamWScalars | undefined;
    const hook: TrainHook = {
      every: 1,
      fn: ({ step, model, optimizer, final }) => {
        if (final) finalScalars = optimizer.state().scalars;
        else if (step === 2) {
          poisoned = snapshot(model, optimizer);
          restore = poisonLoss(model, "loss");
        } else if (step === 4) {
          whileSkipping = snapshot(model, optimizer);
          restore!();
        }
      },
    };
    const runDir = path.join(dir, "nan-skip");
    const result = await trainLm({ ...config, trainer: { ...config.trainer, numTrainSteps: 6, runDir, crashOnNonFinite: false } }, { hooks: [hook] });
    expect(result).toMatchObject({ step: 6, stoppedEarly: false, skippedSteps: 2 });
    expect(Number.isFinite(result.finalLoss)).toBe(true);
    expect(whileSkipping).toEqual(poisoned);
    // Steps 2 and 3 were skipped: Adam took 4 steps, not 6.
    expect(finalScalars!.step).toBe(4);
    const lines = readFileSync(path.join(runDir, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, number | null>);
    expect(lines.map((l) => l["train/skipped_steps"])).toEqual([0, 0, 1, 2, 2, 2]);
    expect(lines[2]!["train/loss"]).toBeNull();
  });

  it("an already-aborted signal stops before the first step", async () => {
    const runDir = path.join(dir, "pre-aborted");
    const result = await trainLm({ ...config, trainer: { ...config.trainer, numTrainSteps: 6, runDir } }, { signal: AbortSignal.abort() });
    expect(result).toMatchObject({ step: 0, stoppedEarly: true });
  });

  it("an abort stops at the next step boundary, and the listener is removed afterwards", async () => {
    const ctrl = new AbortController();
    const listening: number[] = [];
    const hook: TrainHook = {
      every: 1,
      fn: ({ step, final }) => {
        if (final) return;
        listening.push(getEventListeners(ctrl.signal, "abort").length);
        if (step === 2) ctrl.abort();
      },
    };
    const runDir = path.join(dir, "aborted");
    const result = await trainLm({ ...config, trainer: { ...config.trainer, numTrainSteps: 6, runDir } }, { signal: ctrl.signal, hooks: [hook] });
    expect(result).toMatchObject({ step: 2, stoppedEarly: true });
    expect(listening[0]).toBe(1);
    const stillListening = new AbortController();
    await trainLm({ ...config, trainer: { ...config.trainer, numTrainSteps: 1, runDir: path.join(dir, "aborted-done") } }, { signal: stillListening.signal });
    expect(getEventListeners(stillListening.signal, "abort")).toHaveLength(0);
  });

  it("rejects a bad field, naming its path", async () => {
    await expect(trainLm({ ...config, trainer: { ...config.trainer, numTrainSteps: -3 } })).rejects.toThrow(/trainer\.numTrainSteps: .*got -3/);
    await expect(trainLm({ ...config, model: { ...config.model, nHeads: 5 } } as TrainLmConfigInput)).rejects.toThrow(LevanterError);
    // Far beyond wasm's 4 GiB heap: refused up front, naming the knob.
    await expect(trainLm({ ...config, model: { ...config.model, dModel: 4096, nLayers: 24, nHeads: 32 } })).rejects.toThrow(/wasm.*microBatchSize/);
  });
});
