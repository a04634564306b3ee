// Training state in checkpoints: parameters, optimizer state, loader position and run identity.
import { tf } from "../tf.ts";
import { copyFile, mkdir, stat } from "node:fs/promises";
import path from "node:path";
import type { HfTokenizerFiles } from "../data/hfTokenizer.ts";
import { writeTrainedTokenizer } from "../data/trainTokenizer.ts";
import { formatZodIssues } from "@marin/iris/toolkit";
import { z } from "@marin/iris/toolkit";
import { findLatestCheckpoint, loadCheckpoint, readCheckpointMetadata, saveCheckpoint } from "./checkpointStore.ts";
import { loadTokenizer } from "../data/hfTokenizer.ts";
import type { Tokenizer } from "../data/tokenizer.ts";
import { LevanterError } from "../errors.ts";
import { Rng } from "../rng.ts";
import { ModelConfigSchema, resolveModelConfig, type ResolvedModelConfig } from "../models/modelConfig.ts";
import { TransformerLm } from "../models/transformer.ts";
import type { AdamW } from "../optim/adamw.ts";
import { runIdentitySchema, type RunIdentity } from "./runIdentity.ts";

const PARAM_PREFIX = "params/";
const OPT_PREFIX = "opt/";

/** The JSON state a training checkpoint carries besides its arrays. */
const trainStateSchema = z.object({
  version: z.literal(1),
  step: z.number().int().nonnegative(),
  model: z.record(z.string(), z.unknown()),
  tokenizer: z.string(),
  optimizer: z.object({ step: z.number(), beta1Power: z.number(), beta2Power: z.number() }),
  rng: z.number().int().nonnegative(),
  /** The loader is a pure function of (seed, step): its position is the step. */
  loader: z.object({ seed: z.number(), step: z.number().int().nonnegative(), batchSize: z.number(), seqLen: z.number() }),
  /** The data the run trains on (absent in checkpoints written before it was recorded). */
  run: runIdentitySchema.optional(),
});

/** The JSON state of a training checkpoint. */
export type TrainState = z.infer<typeof trainStateSchema>;

/**
 * The files of a Hugging Face tokenizer a checkpoint carries beside its arrays (an imported model,
 * or a run started from one): `tokenizer.json` and, when there is one, `tokenizer_config.json`.
 */
export const CHECKPOINT_TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json"] as const;

/** The tokenizer.json a checkpoint directory carries, or undefined. */
export async function checkpointTokenizerFile(dir: string): Promise<string | undefined> {
  const file = path.join(dir, CHECKPOINT_TOKENIZER_FILES[0]);
  return (await stat(file)
    .then((s) => s.isFile())
    .catch(() => false))
    ? file
    : undefined;
}

/** Copies the tokenizer files of `fromDir` (a checkpoint, or a folder with tokenizer.json) into `dir`. */
async function copyTokenizerFiles(fromDir: string, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const f of CHECKPOINT_TOKENIZER_FILES) {
    const src = path.join(fromDir, f);
    if (
      await stat(src)
        .then((x) => x.isFile())
        .catch(() => false)
    )
      await copyFile(src, path.join(dir, f));
    else if (f === "tokenizer.json") throw new LevanterError("INVALID_CONFIG", `tokenizer: ${src} does not exist`);
  }
}

/**
 * The tokenizer of a checkpoint whose state names `name`: `override` (a tokenizer.json) when
 * given, the built-in byte tokenizer for `byte`, else the tokenizer files the checkpoint carries.
 */
export async function checkpointTokenizer(name: string, checkpointDir: string, override?: string): Promise<Tokenizer> {
  if (override) return loadTokenizer(override, { name });
  if (name === "byte") return loadTokenizer("byte");
  const carried = await checkpointTokenizerFile(checkpointDir);
  if (!carried) throw new LevanterError("INVALID_CONFIG", `tokenizerJson: required for tokenizer "${name}" (${checkpointDir} carries no tokenizer.json; only "byte" is built in)`);
  return loadTokenizer(carried, { name });
}

/**
 * Saves parameters, AdamW state, RNG and loader position at `step` into `dir` (metadata.json
 * last); `tokenizerDir` (a folder with tokenizer.json) is copied in beside them.
 */
export async function saveTrainState(
  dir: string,
  isTemporary: boolean,
  s: {
    step: number;
    model: TransformerLm;
    optimizer: Pick<AdamW, "state">;
    rng: Rng;
    tokenizer: string;
    loader: TrainState["loader"];
    run?: RunIdentity;
    /** A Hugging Face tokenizer's files, written as `tokenizer.json` (+ `tokenizer_config.json`) so that evaluation, generation and serving find it. */
    tokenizerFiles?: HfTokenizerFiles;
    /** Else a folder whose tokenizer files are copied in (an imported checkpoint's). */
    tokenizerDir?: string;
  },
): Promise<void> {
  if (s.tokenizerFiles) await writeTrainedTokenizer(dir, s.tokenizerFiles);
  else if (s.tokenizerDir) await copyTokenizerFiles(s.tokenizerDir, dir);
  const arrays: Record<string, { shape: number[]; data: Float32Array }> = {};
  for (const [name, p] of s.model.params) arrays[PARAM_PREFIX + name] = { shape: p.shape, data: p.dataSync() as Float32Array };
  const opt = s.optimizer.state();
  for (const [name, a] of opt.arrays) arrays[OPT_PREFIX + name] = { shape: s.model.params.get(name.replace(/\/adam_[mv]$/, ""))!.shape, data: a };
  const state: TrainState = {
    version: 1,
    step: s.step,
    model: s.model.config as unknown as Record<string, unknown>,
    tokenizer: s.tokenizer,
    optimizer: opt.scalars,
    rng: s.rng.state,
    loader: s.loader,
    ...(s.run ? { run: s.run } : {}),
  };
  await saveCheckpoint(dir, { step: s.step, isTemporary, arrays, state });
}

/**
 * Writes a model that was not trained here (an import) as a step-0 checkpoint in `dir`: its
 * parameters, a fresh optimizer's scalars (no moments) and the tokenizer files of `tokenizerDir`.
 */
export async function saveModelCheckpoint(
  dir: string,
  s: { config: ResolvedModelConfig; params: ReadonlyMap<string, { shape: number[]; data: Float32Array }>; tokenizer: string; tokenizerDir?: string },
): Promise<void> {
  if (s.tokenizerDir) await copyTokenizerFiles(s.tokenizerDir, dir);
  const arrays: Record<string, { shape: number[]; data: Float32Array }> = {};
  for (const [name, p] of s.params) arrays[PARAM_PREFIX + name] = p;
  const state: TrainState = {
    version: 1,
    step: 0,
    model: s.config as unknown as Record<string, unknown>,
    tokenizer: s.tokenizer,
    optimizer: { step: 0, beta1Power: 1, beta2Power: 1 },
    rng: 0,
    loader: { seed: 0, step: 0, batchSize: 1, seqLen: s.config.seqLen },
  };
  await saveCheckpoint(dir, { step: 0, arrays, state });
}

/** The complete checkpoint `dir` names: itself (a `step-N`) or the newest under it. */
export async function resolveCheckpointDir(dir: string): Promise<string> {
  if ((await readCheckpointMetadata(dir)) !== undefined) return dir;
  const found = await findLatestCheckpoint(dir);
  if (!found) throw new LevanterError("CHECKPOINT_NOT_FOUND", `${dir}: no complete checkpoint (no metadata.json here or in a step-N directory)`);
  return found.path;
}

/** A checkpoint's model config, tokenizer name and parameters, for evaluation or generation. */
export async function readTrainCheckpoint(dir: string): Promise<{
  state: TrainState;
  modelConfig: ResolvedModelConfig;
  params: Map<string, { shape: number[]; data: Float32Array }>;
  optimizer: Map<string, Float32Array>;
}> {
  const ckpt = await loadCheckpoint(dir);
  const parsed = trainStateSchema.safeParse(ckpt.state);
  if (!parsed.success) throw new LevanterError("CHECKPOINT_CORRUPT", `${dir}/state.json: not a levanter training state: ${formatZodIssues(parsed.error)}`);
  if (parsed.data.step !== ckpt.metadata.step) {
    throw new LevanterError("CHECKPOINT_CORRUPT", `${dir}/state.json: step ${parsed.data.step} does not match metadata.json's step ${ckpt.metadata.step}`);
  }
  const model = ModelConfigSchema.safeParse(parsed.data.model);
  if (!model.success) throw new LevanterError("CHECKPOINT_CORRUPT", `${dir}: state.json model config is invalid`);
  const params = new Map<string, { shape: number[]; data: Float32Array }>();
  const optimizer = new Map<string, Float32Array>();
  for (const name of ckpt.names) {
    const a = ckpt.arrays[name]!;
    if (name.startsWith(PARAM_PREFIX)) params.set(name.slice(PARAM_PREFIX.length), { shape: a.shape, data: a.data as Float32Array });
    else if (name.startsWith(OPT_PREFIX)) optimizer.set(name.slice(OPT_PREFIX.length), a.data as Float32Array);
  }
  return { state: parsed.data, modelConfig: resolveModelConfig(model.data), params, optimizer };
}

/** Assigns stored parameters to a model built from the same config, checking names and shapes. */
export function assignParams(model: TransformerLm, params: Map<string, { shape: number[]; data: Float32Array }>, where: string): void {
  for (const [name, p] of model.params) {
    const stored = params.get(name);
    if (!stored || stored.shape.join(",") !== p.shape.join(",")) {
      throw new LevanterError("CHECKPOINT_CORRUPT", `${where}: parameter ${name} is missing or has another shape than [${p.shape.join(", ")}]`);
    }
    tf.tidy(() => p.assign(tf.tensor(stored.data, p.shape, "float32")));
  }
}

/**
 * Loads a model from a checkpoint for inference: `dir` is one `step-N` directory, or a directory
 * of them (the newest complete one is used). Call `selectBackend()` first.
 */
export async function loadModelFromCheckpoint(dir: string): Promise<{ model: TransformerLm; state: TrainState; path: string }> {
  const ckptDir = await resolveCheckpointDir(dir);
  const ckpt = await readTrainCheckpoint(ckptDir);
  const model = TransformerLm.init(ckpt.modelConfig, new Rng(0));
  try {
    assignParams(model, ckpt.params, ckptDir);
  } catch (e) {
    model.dispose();
    throw e;
  }
  return { model, state: ckpt.state, path: ckptDir };
}
