import path from "node:path";
import type { ModelConfigInput, OptimizerConfigInput } from "@marin/levanter";
import { defineStep, ignore } from "../step/step.ts";
import type { OutputRef, Step, StepResources } from "../step/step.ts";
import { TRAIN_CACHE, VALIDATION_CACHE } from "./tokenize.ts";

/** The `trainer` settings a pipeline chooses (the run folder, trackers and checkpoint location are the step's). */
export interface TrainLmTrainerOptions {
  numTrainSteps: number;
  batchSize?: number;
  microBatchSize?: number;
  seed?: number;
  stepsPerEval?: number;
  maxEvalBatches?: number;
  /** Seconds between time-based checkpoints (default 60). */
  checkpointIntervalSeconds?: number;
}

/** Options of {@link trainLm}. */
export interface TrainLmOptions {
  /** Step name (default `train`). */
  name?: string;
  /** A tokenize step's output: `outputOf(tokenizeStep)` (its `train/` and `validation/` caches are used). */
  data: OutputRef;
  model: ModelConfigInput;
  optimizer?: OptimizerConfigInput;
  trainer: TrainLmTrainerOptions;
  /** Resources of the iris job (default one core). */
  resources?: StepResources;
  /** Force a tfjs backend (not part of identity). */
  backend?: "tensorflow-gpu" | "tensorflow" | "wasm" | "cpu";
}

/** Folder of a trainLm step's output holding `step-N/` checkpoints. */
export const CHECKPOINTS = "checkpoints";

/**
 * Trains a decoder-only LM with levanter in an iris job. Checkpoints go to `checkpoints/` inside
 * the step's output; the step is resumable, so a re-run after a crash continues from the newest
 * complete checkpoint (levanter resumes bit-exactly).
 */
export function trainLm(opts: TrainLmOptions): Step<any> {
  const t = opts.trainer;
  return defineStep({
    name: opts.name ?? "train",
    description: "train an LM with levanter (iris job)",
    version: "1",
    resumable: true,
    resources: opts.resources ?? { cpuMillis: 1000 },
    config: {
      data: opts.data,
      model: opts.model,
      optimizer: opts.optimizer ?? {},
      trainer: {
        numTrainSteps: t.numTrainSteps,
        batchSize: t.batchSize ?? 16,
        ...(t.microBatchSize !== undefined ? { microBatchSize: t.microBatchSize } : {}),
        seed: t.seed ?? 0,
        stepsPerEval: t.stepsPerEval ?? t.numTrainSteps,
        ...(t.maxEvalBatches !== undefined ? { maxEvalBatches: t.maxEvalBatches } : {}),
        checkpointIntervalSeconds: ignore(t.checkpointIntervalSeconds ?? 60),
      },
      backend: ignore(opts.backend ?? null),
    },
    fn: async (ctx) => {
      const cfg = ctx.config as {
        data: string;
        model: ModelConfigInput;
        optimizer: OptimizerConfigInput;
        trainer: Required<Omit<TrainLmTrainerOptions, "microBatchSize" | "maxEvalBatches">> & Pick<TrainLmTrainerOptions, "microBatchSize" | "maxEvalBatches">;
        backend: TrainLmOptions["backend"] | null;
      };
      const { checkpointIntervalSeconds, ...trainer } = cfg.trainer;
      const { trainLm: levanterTrainLm } = await import("@marin/levanter");
      const result = await levanterTrainLm(
        {
          model: cfg.model,
          data: { trainCache: path.join(cfg.data, TRAIN_CACHE), validationCache: path.join(cfg.data, VALIDATION_CACHE) },
          optimizer: cfg.optimizer,
          trainer: {
            ...trainer,
            runDir: ctx.outputPath,
            trackers: ["console", "jsonl", "tensorboard"],
            checkpointer: { basePath: path.join(ctx.outputPath, CHECKPOINTS), saveIntervalSeconds: checkpointIntervalSeconds, keep: null },
            resume: true,
            ...(cfg.backend ? { backend: cfg.backend } : {}),
          },
        },
        { signal: ctx.signal },
      );
      if (result.stoppedEarly) throw new Error(`training stopped early at step ${result.step} (a checkpoint was saved; re-run to resume)`);
      return {
        steps: result.step,
        ...(result.resumedFrom !== undefined ? { resumedFrom: result.resumedFrom } : {}),
        ...(result.finalLoss !== undefined ? { finalTrainLoss: result.finalLoss } : {}),
        parameters: result.parameterCount,
      };
    },
  });
}
