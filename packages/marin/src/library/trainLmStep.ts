// The trainLmStep standard step: trains a levanter LM in an iris job, resumable from its checkpoints.
import path from "node:path";
import type { ModelConfigInput, OptimizerConfigInput } from "@marin/levanter";
import { z } from "@marin/iris/toolkit";
import { defineStep, ignore } from "../step/step.ts";
import type { OutputRef, Step, StepResources } from "../step/step.ts";
import { checkOptions, leavesOf, RESOURCE_KEYS } from "./options.ts";
import { TRAIN_CACHE, VALIDATION_CACHE } from "./tokenize.ts";

/** The `trainer` settings a pipeline chooses (the run folder, trackers and checkpoint location are the step's). */
export interface TrainLmTrainerOptions {
  numTrainSteps: number;
  batchSize?: number;
  microBatchSize?: number;
  /** Micro-batches per step (levanter's `trainer.microBatches`): fix it to get the same bits for any `ranks`. */
  microBatches?: number;
  seed?: number;
  stepsPerEval?: number;
  maxEvalBatches?: number;
  /** Seconds between time-based checkpoints (default 60). */
  checkpointIntervalSeconds?: number;
}

/** One source of a {@link TrainLmStepOptions.mixture}. */
export interface TrainLmMixtureSource {
  /** Names it in `weightsAt` and in the per-source evaluation (`eval/<name>/bpb`, the result's `evalBpb`). */
  name: string;
  /** A tokenize step's output (`outputOf(tokenizeStep)`): its `train/` cache, and `validation/` unless `validation: false`. */
  data: OutputRef;
  weight: number;
  /** Evaluate on the source's `validation/` cache (default true). */
  validation?: boolean;
}

/** Options of {@link trainLmStep}. */
export interface TrainLmStepOptions {
  /** Step name (default `train`). */
  name?: string;
  /**
   * A tokenize step's output: `outputOf(tokenizeStep)` (its `train/` and `validation/` caches are
   * used). Or, with `mixture`, optional: then its `validation/` cache is the run's `eval/bpb`.
   */
  data?: OutputRef;
  /**
   * Train on weighted sources instead of `data` (levanter's `data.mixture`): every source made by
   * the same tokenizer; `weightsAt` changes the weights from a step on.
   */
  mixture?: { sources: TrainLmMixtureSource[]; weightsAt?: { step: number; weights: Record<string, number> }[] };
  /** Model fields; with `initializeFrom` the shape comes from the checkpoint (fields given must agree). */
  model?: ModelConfigInput;
  /**
   * Start from another step's checkpoints (`outputOf(importHfModel(…), "checkpoints")` or a train
   * step's): levanter's `trainer.initializeFrom`.
   */
  initializeFrom?: OutputRef;
  optimizer?: OptimizerConfigInput;
  trainer: TrainLmTrainerOptions;
  /** Resources of the iris job (default one core). */
  resources?: StepResources;
  /**
   * Data-parallel ranks (default 1; not part of identity: levanter gives the same bits for any
   * number of ranks with the same `trainer.microBatches`). Above 1 the step trains in an iris gang:
   * a child job of the step's iris job, or an embedded local cluster when the step runs in-process.
   */
  ranks?: number;
  /** Force a tfjs backend (not part of identity). */
  backend?: "tensorflow-gpu" | "tensorflow" | "wasm" | "cpu";
}

const posInt = z.number().int().positive();
const fracOrSteps = z
  .number()
  .nonnegative()
  .refine((v) => v < 1 || Number.isInteger(v), { message: "expected a fraction below 1 or a whole number of steps" });
const intOrList = z.union([posInt, z.array(posInt).min(1)]);

/**
 * The resolved config of a {@link trainLmStep} step, checked when the graph is resolved (before any step
 * runs) rather than inside the iris job after the upstream steps. A light mirror of levanter's
 * `ModelConfigSchema`, `OptimizerConfigSchema` and the trainer fields marin passes: importing
 * `@marin/levanter` loads TensorFlow.js, which plans and cached runs must not pay for. Levanter
 * still validates fully in the job; `trainLmStep.test.ts` keeps the field lists in step with it.
 */
export const trainLmStepConfigSchema = z
  .object({
    data: z.string().min(1).optional(),
    initializeFrom: z.string().min(1).optional(),
    mixture: z
      .object({
        sources: z
          .array(
            z
              .object({
                name: z.string().regex(/^[A-Za-z0-9_.-]+$/, "expected letters, digits, '_', '.' or '-'"),
                data: z.string().min(1),
                weight: z.number().finite().nonnegative(),
                validation: z.boolean(),
              })
              .strict(),
          )
          .min(1)
          .refine((s) => new Set(s.map((x) => x.name)).size === s.length, { message: "source names must be distinct" })
          .refine((s) => s.some((x) => x.weight > 0), { message: "the weights sum to 0; at least one source needs a positive weight" }),
        weightsAt: z.array(z.object({ step: z.number().int().nonnegative(), weights: z.record(z.string(), z.number().finite().nonnegative()) }).strict()).optional(),
      })
      .strict()
      .optional(),
    model: z
      .object({
        type: z.literal("transformer").optional(),
        vocabSize: posInt.optional(),
        seqLen: posInt.optional(),
        dModel: posInt.optional(),
        nLayers: posInt.optional(),
        nHeads: posInt.optional(),
        nKvHeads: posInt.optional(),
        headDim: posInt.optional(),
        dFF: posInt.optional(),
        activation: z.enum(["gelu", "swiglu"]).optional(),
        norm: z.enum(["layer", "rms"]).optional(),
        positions: z.enum(["learned", "rope"]).optional(),
        tieEmbeddings: z.boolean().optional(),
        useBias: z.boolean().optional(),
        normEps: z.number().positive().optional(),
        initStd: z.number().positive().optional(),
        ropeTheta: z.number().positive().optional(),
      })
      .strict()
      .refine((m) => m.headDim !== undefined || (m.dModel ?? 128) % (m.nHeads ?? 4) === 0, { message: "dModel must be divisible by nHeads (or set headDim)", path: ["dModel"] })
      .refine((m) => m.nKvHeads === undefined || (m.nHeads ?? 4) % m.nKvHeads === 0, { message: "nKvHeads must divide nHeads", path: ["nKvHeads"] })
      .refine((m) => m.positions !== "rope" || (m.headDim ?? (m.dModel ?? 128) / (m.nHeads ?? 4)) % 2 === 0, {
        message: "rotary positions need an even head dimension (headDim, default dModel / nHeads)",
        path: ["positions"],
      }),
    optimizer: z
      .object({
        learningRate: z.number().nonnegative().optional(),
        weightDecay: z.number().nonnegative().optional(),
        beta1: z.number().min(0).max(1).optional(),
        beta2: z.number().min(0).max(1).optional(),
        epsilon: z.number().positive().optional(),
        maxGradNorm: z.number().nonnegative().optional(),
        lrSchedule: z.enum(["constant", "linear", "cosine", "inv_sqrt", "wsd"]).optional(),
        minLrRatio: z.number().min(0).max(1).optional(),
        warmup: fracOrSteps.optional(),
        decay: fracOrSteps.optional(),
        rewarmup: fracOrSteps.optional(),
        cycles: intOrList.optional(),
        cycleLength: intOrList.optional(),
        noDecay: z.array(z.string()).optional(),
      })
      .strict()
      .refine((o) => o.cycles === undefined || o.cycleLength === undefined, { message: "set cycles or cycleLength, not both", path: ["cycleLength"] }),
    trainer: z
      .object({
        numTrainSteps: posInt,
        batchSize: posInt,
        microBatchSize: posInt.optional(),
        microBatches: posInt.optional(),
        seed: z.number().int().nonnegative(),
        stepsPerEval: posInt,
        maxEvalBatches: posInt.optional(),
        checkpointIntervalSeconds: z.number().positive(),
      })
      .strict()
      .refine((t) => t.microBatchSize === undefined || t.batchSize % t.microBatchSize === 0, {
        message: "batchSize must be a multiple of microBatchSize",
        path: ["microBatchSize"],
      }),
    backend: z.enum(["tensorflow-gpu", "tensorflow", "wasm", "cpu"]).nullable(),
    threads: z.number().int().positive(),
    ranks: posInt,
  })
  .strict()
  .refine((c) => c.data !== undefined || c.mixture !== undefined, { message: "set data (a tokenize step's output) or mixture", path: ["data"] });

/** Folder of a {@link trainLmStep}'s output holding `step-N/` checkpoints. */
export const CHECKPOINTS = "checkpoints";

/**
 * Trains a decoder-only LM with levanter in an iris job. Checkpoints go to `checkpoints/` inside
 * the step's output; the step is resumable, so a re-run after a crash continues from the newest
 * complete checkpoint (levanter resumes bit-exactly).
 */
export function trainLmStep(opts: TrainLmStepOptions): Step<any> {
  const shape = trainLmStepConfigSchema.shape;
  checkOptions(
    "trainLmStep",
    {
      name: true,
      data: true,
      initializeFrom: true,
      mixture: true,
      model: leavesOf(shape.model),
      optimizer: leavesOf(shape.optimizer),
      trainer: leavesOf(shape.trainer),
      resources: RESOURCE_KEYS,
      backend: true,
      ranks: true,
    },
    opts,
  );
  const t = opts.trainer;
  const resources = opts.resources ?? { cpuMillis: 1000 };
  return defineStep({
    name: opts.name ?? "train",
    description: "train an LM with levanter (iris job)",
    version: "1",
    resumable: true,
    schema: trainLmStepConfigSchema,
    resources,
    config: {
      // Only the keys given, so that the identity of steps without a mixture is unchanged.
      ...(opts.data !== undefined ? { data: opts.data } : {}),
      ...(opts.mixture !== undefined
        ? {
            mixture: {
              sources: opts.mixture.sources.map((s) => ({ name: s.name, data: s.data, weight: s.weight, validation: s.validation ?? true })),
              ...(opts.mixture.weightsAt !== undefined ? { weightsAt: opts.mixture.weightsAt } : {}),
            },
          }
        : {}),
      // Only when set: configs without it keep their identity.
      ...(opts.initializeFrom ? { initializeFrom: opts.initializeFrom } : {}),
      model: opts.model ?? {},
      optimizer: opts.optimizer ?? {},
      trainer: {
        numTrainSteps: t.numTrainSteps,
        batchSize: t.batchSize ?? 16,
        ...(t.microBatchSize !== undefined ? { microBatchSize: t.microBatchSize } : {}),
        ...(t.microBatches !== undefined ? { microBatches: t.microBatches } : {}),
        seed: t.seed ?? 0,
        stepsPerEval: t.stepsPerEval ?? t.numTrainSteps,
        ...(t.maxEvalBatches !== undefined ? { maxEvalBatches: t.maxEvalBatches } : {}),
        checkpointIntervalSeconds: ignore(t.checkpointIntervalSeconds ?? 60),
      },
      backend: ignore(opts.backend ?? null),
      // The job's cores run wasm's matMul pool (bitwise the same for any count: not versioned).
      threads: ignore(Math.max(1, Math.floor((resources.cpuMillis ?? 1000) / 1000))),
      ranks: ignore(opts.ranks ?? 1),
    },
    fn: async (ctx) => {
      const cfg = ctx.config as {
        data?: string;
        initializeFrom?: string;
        mixture?: { sources: { name: string; data: string; weight: number; validation: boolean }[]; weightsAt?: { step: number; weights: Record<string, number> }[] };
        model: ModelConfigInput;
        optimizer: OptimizerConfigInput;
        trainer: Required<Omit<TrainLmTrainerOptions, "microBatchSize" | "microBatches" | "maxEvalBatches">> &
          Pick<TrainLmTrainerOptions, "microBatchSize" | "microBatches" | "maxEvalBatches">;
        backend: TrainLmStepOptions["backend"] | null;
        threads: number;
        ranks: number;
      };
      const { checkpointIntervalSeconds, ...trainer } = cfg.trainer;
      const { trainLm: levanterTrainLm, runTrainGang } = await import("@marin/levanter");
      const levanterConfig = {
        model: cfg.model,
        data: cfg.mixture
          ? {
              mixture: {
                sources: cfg.mixture.sources.map((s) => ({
                  name: s.name,
                  trainCache: path.join(s.data, TRAIN_CACHE),
                  ...(s.validation ? { validationCache: path.join(s.data, VALIDATION_CACHE) } : {}),
                  weight: s.weight,
                })),
                ...(cfg.mixture.weightsAt ? { weightsAt: cfg.mixture.weightsAt } : {}),
              },
              ...(cfg.data !== undefined ? { validationCache: path.join(cfg.data, VALIDATION_CACHE) } : {}),
            }
          : { trainCache: path.join(cfg.data!, TRAIN_CACHE), validationCache: path.join(cfg.data!, VALIDATION_CACHE) },
        optimizer: cfg.optimizer,
        trainer: {
          ...trainer,
          runDir: ctx.outputPath,
          trackers: ["console", "jsonl", "tensorboard"],
          checkpointer: { basePath: path.join(ctx.outputPath, CHECKPOINTS), saveIntervalSeconds: checkpointIntervalSeconds, keep: null },
          resume: true,
          ...(cfg.backend ? { backend: cfg.backend } : {}),
          ...(cfg.initializeFrom !== undefined ? { initializeFrom: cfg.initializeFrom } : {}),
          threads: cfg.ranks > 1 ? 1 : cfg.threads,
        },
      } satisfies Parameters<typeof levanterTrainLm>[0];
      if (cfg.ranks > 1) {
        // Rank 0's progress becomes this step's, as one rank's would (live view, dashboard), and
        // every rank's log lines go to this step's log, each prefixed with its rank.
        const gang = await runTrainGang(levanterConfig, cfg.ranks, {
          signal: ctx.signal,
          logOut: process.stderr,
          statusSink: async (text, metrics) => ctx.reportStatus(text, metrics),
        });
        if (gang.state !== "SUCCEEDED" || !gang.result)
          throw new Error(`the ${cfg.ranks}-rank training gang ${gang.job} ended ${gang.state}${gang.error ? `: ${gang.error}` : ""}`);
        const r = gang.result;
        return {
          steps: r.step,
          ranks: cfg.ranks,
          ...(r.resumedFrom !== undefined ? { resumedFrom: r.resumedFrom } : {}),
          ...(r.finalLoss !== undefined ? { finalTrainLoss: r.finalLoss } : {}),
          parameters: r.parameterCount,
          ...perSource(r.evalBySource),
        };
      }
      const result = await levanterTrainLm(
        levanterConfig,
        // Progress (step/total, loss, tok/s, ETA) to the live view: in an iris job through the task's status report.
        { signal: ctx.signal, statusSink: async (text, metrics) => ctx.reportStatus(text, metrics) },
      );
      if (result.stoppedEarly) throw new Error(`training stopped early at step ${result.step} (a checkpoint was saved; re-run to resume)`);
      return {
        steps: result.step,
        ...(result.resumedFrom !== undefined ? { resumedFrom: result.resumedFrom } : {}),
        ...(result.finalLoss !== undefined ? { finalTrainLoss: result.finalLoss } : {}),
        parameters: result.parameterCount,
        ...perSource(result.evalBySource),
      };
    },
  });
}

// A mixture's last per-source evaluation, for the step's result (and so the summary and the dashboard).
function perSource(evals: Record<string, { loss: number; bpb: number }> | undefined): { evalBpb?: Record<string, number> } {
  return evals ? { evalBpb: Object.fromEntries(Object.entries(evals).map(([n, e]) => [n, Number(e.bpb.toFixed(4))])) } : {};
}
