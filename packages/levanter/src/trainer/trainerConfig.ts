// The training config: zod schemas of its `data` and `trainer` sections and the whole `trainLm` config.
import { formatZodIssues } from "@marin/iris/toolkit";
import { z } from "@marin/iris/toolkit";
import { BACKEND_NAMES } from "../backend.ts";
import { checkpointerConfigSchema } from "../checkpoint/checkpointer.ts";
import { LevanterError } from "../errors.ts";
import { ModelConfigSchema } from "../models/modelConfig.ts";
import { OptimizerConfigSchema } from "../optim/optimizerConfig.ts";

/** Names of the trackers `trainer.trackers` may list. */
export const TRACKER_NAMES = ["console", "jsonl", "tensorboard"] as const;

/**
 * `trainer.checkpointer`: the checkpoint policy (see `Checkpointer`), with `basePath` defaulting
 * to `<runDir>/checkpoints`. Validated here so that errors name the full path.
 */
const CheckpointerSectionSchema = z
  .record(z.string(), z.unknown())
  .default({})
  .superRefine((v, ctx) => {
    const r = checkpointerConfigSchema.safeParse({ basePath: "unused", ...v });
    if (!r.success) for (const issue of r.error.issues) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  });

/** The `trainer` section: the loop, evaluation, logging, checkpoints. */
export const TrainerConfigSchema = z
  .object({
    seed: z.number().int().nonnegative().default(0),
    numTrainSteps: z.number().int().positive(),
    /** Sequences per step (global batch). */
    batchSize: z.number().int().positive().default(16),
    /** Sequences per forward/backward pass; smaller than `batchSize` accumulates gradients. */
    microBatchSize: z.number().int().positive().optional(),
    /**
     * Micro-batches the global batch is split into (default `batchSize / microBatchSize`, else the
     * number of data-parallel ranks). A step's gradient is defined by its micro-batches alone,
     * summed exactly: the same micro-batches give the same bits on any number of ranks (≤ this).
     */
    microBatches: z.number().int().positive().optional(),
    /** Evaluate every this many steps (and at the end); needs `data.validationCache`. */
    stepsPerEval: z.number().int().positive().default(1000),
    maxEvalBatches: z.number().int().positive().optional(),
    /** Where metrics, event files and (by default) checkpoints go. */
    runDir: z.string().min(1).default("runs/levanter"),
    trackers: z.array(z.enum(TRACKER_NAMES)).default(["console", "jsonl", "tensorboard"]),
    /** Log train metrics to the trackers every this many steps. */
    logEvery: z.number().int().positive().default(1),
    checkpointer: CheckpointerSectionSchema,
    /** Resume from the newest complete checkpoint if one exists (true), or never (false). */
    resume: z.boolean().default(true),
    /**
     * Resuming is required: fail (CHECKPOINT_NOT_FOUND) when there is no complete checkpoint, and
     * (CHECKPOINT_CORRUPT) on a checkpoint directory whose metadata.json is damaged, which is
     * otherwise skipped with a warning naming it. CLI: `--require-checkpoint`.
     */
    requireCheckpoint: z.boolean().default(false),
    /** Seconds between status reports to iris (when running as an iris task). */
    statusIntervalSeconds: z.number().positive().default(30),
    /**
     * On a NaN/Inf loss or global gradient norm: stop with NON_FINITE_LOSS before the update is
     * applied (true), or skip that step's update, warn and count it in `train/skipped_steps` (false).
     */
    crashOnNonFinite: z.boolean().default(true),
    /** Force a backend (else `LEVANTER_BACKEND`, else automatic). */
    backend: z.enum(BACKEND_NAMES).optional(),
    /** Threads for wasm's matrix products (else `LEVANTER_THREADS`, else the core count); same bits for any value. */
    threads: z.number().int().min(1).max(256).optional(),
    /**
     * Start from this checkpoint's parameters (a `step-N` checkpoint or a directory of them, newest
     * used; e.g. from `levanter import hf`): the model's shape and tokenizer come from it, and the
     * run's checkpoints carry that tokenizer. Model fields the config writes must agree with it.
     */
    initializeFrom: z.string().min(1).optional(),
    /** Filled in when parsing a config with `initializeFrom`: the model fields it wrote explicitly. */
    initializeModelFields: z.array(z.string()).optional(),
    /** Peak FLOP/s MFU is measured against; default: the measured 2-core native SGEMM peak. */
    peakFlops: z.number().positive().default(188e9),
  })
  .strict()
  .refine((t) => t.microBatchSize === undefined || t.batchSize % t.microBatchSize === 0, {
    message: "batchSize must be a multiple of microBatchSize",
    path: ["microBatchSize"],
  })
  .refine((t) => t.microBatches === undefined || t.batchSize % t.microBatches === 0, {
    message: "batchSize must be a multiple of microBatches",
    path: ["microBatches"],
  })
  .refine((t) => t.microBatches === undefined || t.microBatchSize === undefined || t.microBatches * t.microBatchSize === t.batchSize, {
    message: "microBatches × microBatchSize must equal batchSize",
    path: ["microBatches"],
  })
  .refine((t) => t.resume || !t.requireCheckpoint, { message: "requireCheckpoint needs resume: true", path: ["requireCheckpoint"] });

const weight = z.number().finite().nonnegative();

/** `data.mixture`: weighted token caches trained on together, instead of one `data.trainCache`. */
export const MixtureConfigSchema = z
  .object({
    sources: z
      .array(
        z
          .object({
            /** Names the source in `weightsAt` and in its evaluation metrics (`eval/<name>/loss`, `eval/<name>/bpb`). */
            name: z.string().regex(/^[A-Za-z0-9_.-]+$/, "expected letters, digits, '_', '.' or '-'"),
            trainCache: z.string().min(1),
            /** Evaluated on its own at every evaluation: `eval/<name>/loss` and `eval/<name>/bpb`. */
            validationCache: z.string().min(1).optional(),
            weight,
          })
          .strict(),
      )
      .min(1),
    /** From each `step` on, these weights (a source not named weighs 0); steps increasing. */
    weightsAt: z.array(z.object({ step: z.number().int().nonnegative(), weights: z.record(z.string(), weight) }).strict()).optional(),
  })
  .strict()
  .superRefine((m, ctx) => {
    const names = m.sources.map((s) => s.name);
    names.forEach((n, i) => {
      if (names.indexOf(n) !== i) ctx.addIssue({ code: "custom", path: ["sources", i, "name"], message: `the name ${JSON.stringify(n)} is used twice` });
    });
    const stages = [{ step: 0, weights: Object.fromEntries(m.sources.map((s) => [s.name, s.weight])) }, ...(m.weightsAt ?? [])];
    stages.forEach((st, i) => {
      const where = i === 0 ? ["sources"] : ["weightsAt", i - 1];
      for (const n of Object.keys(st.weights))
        if (!names.includes(n)) ctx.addIssue({ code: "custom", path: [...where, "weights", n], message: `no source is named ${JSON.stringify(n)}` });
      if (!(Object.values(st.weights).reduce((a, b) => a + b, 0) > 0))
        ctx.addIssue({ code: "custom", path: where, message: "the weights sum to 0; at least one source needs a positive weight" });
      if (i > 1 && st.step <= stages[i - 1]!.step)
        ctx.addIssue({ code: "custom", path: [...where, "step"], message: `steps must increase (${stages[i - 1]!.step}, then ${st.step})` });
    });
  });

/**
 * The `data` section: token caches written by `@marin/levanter/sharding`'s writer — one
 * `trainCache`, or a weighted `mixture` of several (one or the other).
 */
export const DataConfigSchema = z
  .object({
    trainCache: z.string().min(1).optional(),
    mixture: MixtureConfigSchema.optional(),
    /** Evaluated at every evaluation as `eval/loss`, `eval/bpb` (beside a mixture's per-source caches). */
    validationCache: z.string().min(1).optional(),
    /** A HF tokenizer.json; needed for a cache not made by the byte tokenizer that holds no tokenizer.json of its own (bpb, generation). */
    tokenizerJson: z.string().min(1).optional(),
    /** Seed of the data permutation; defaults to `trainer.seed`. */
    seed: z.number().int().nonnegative().optional(),
    shuffle: z.boolean().default(true),
  })
  .strict()
  .refine((d) => (d.trainCache === undefined) !== (d.mixture === undefined), {
    message: "set data.trainCache or data.mixture (one or the other)",
    path: ["trainCache"],
  });

const TrainLmObjectSchema = z
  .object({
    model: ModelConfigSchema.prefault({}),
    data: DataConfigSchema,
    optimizer: OptimizerConfigSchema.prefault({}),
    trainer: TrainerConfigSchema,
  })
  .strict();

/**
 * The whole `trainLm` config: `model`, `data`, `optimizer`, `trainer`. With
 * `trainer.initializeFrom`, the model fields written explicitly are recorded (as
 * `trainer.initializeModelFields`, once) before defaults fill the rest in.
 */
export const TrainLmConfigSchema = z.preprocess((raw) => {
  if (typeof raw !== "object" || raw === null) return raw;
  const r = raw as { model?: unknown; trainer?: unknown };
  const t = r.trainer as { initializeFrom?: unknown; initializeModelFields?: unknown } | undefined;
  if (typeof t !== "object" || t === null || t.initializeFrom === undefined || t.initializeModelFields !== undefined) return raw;
  const fields = typeof r.model === "object" && r.model !== null ? Object.keys(r.model) : [];
  return { ...r, trainer: { ...t, initializeModelFields: fields } };
}, TrainLmObjectSchema);

/** A training config as written (YAML/JSON), defaults optional. */
export type TrainLmConfigInput = z.input<typeof TrainLmObjectSchema>;
/** A validated training config with defaults filled in. */
export type TrainLmConfig = z.output<typeof TrainLmObjectSchema>;
/** The `trainer` section after validation. */
export type TrainerConfig = z.output<typeof TrainerConfigSchema>;
/** The `data` section after validation. */
export type DataConfig = z.output<typeof DataConfigSchema>;

/** Validates a training config, throwing `INVALID_CONFIG` whose message names each bad field's path. */
export function parseTrainLmConfig(input: unknown): TrainLmConfig {
  const r = TrainLmConfigSchema.safeParse(input);
  if (!r.success) throw new LevanterError("INVALID_CONFIG", `invalid config: ${formatZodIssues(r.error, { input })}`);
  return r.data;
}
