// What a run directory remembers of its config (model and data), and the check that a new `train`
// in that directory continues the same run: differing fields are named, not met as shape errors.
import path from "node:path";
import { z } from "@marin/iris/toolkit";
import { LevanterError } from "../errors.ts";
import type { ResolvedModelConfig } from "../models/modelConfig.ts";
import type { TokenCacheReader } from "../sharding/tokenCacheReader.ts";

const cacheIdentitySchema = z.object({
  /** Absolute path when the checkpoint was written (informative: contents decide). */
  path: z.string(),
  tokenizer: z.string(),
  vocabSize: z.number(),
  totalTokens: z.number(),
  totalDocuments: z.number(),
});

/** The data a run trains on, as a training checkpoint's state.json records it (`run`). */
export const runIdentitySchema = z.object({
  data: z.object({
    trainCache: cacheIdentitySchema,
    validationCache: cacheIdentitySchema.nullable(),
    /** The data permutation's seed (`data.seed`, else `trainer.seed`). */
    seed: z.number(),
    shuffle: z.boolean(),
    /** With `data.mixture` (`trainCache` is then its first source's): every source and the weights. */
    mixture: z
      .object({
        sources: z.array(z.object({ name: z.string(), weight: z.number(), trainCache: cacheIdentitySchema, validationCache: cacheIdentitySchema.nullable() })),
        weightsAt: z.array(z.object({ step: z.number(), weights: z.record(z.string(), z.number()) })),
      })
      .optional(),
  }),
});

/** See {@link runIdentitySchema}. */
export type RunIdentity = z.infer<typeof runIdentitySchema>;

type CacheIdentity = z.infer<typeof cacheIdentitySchema>;

function cacheIdentity(reader: TokenCacheReader): CacheIdentity {
  const l = reader.ledger;
  return { path: path.resolve(reader.dir), tokenizer: l.tokenizer, vocabSize: l.vocabSize, totalTokens: l.totalTokens, totalDocuments: l.totalDocuments };
}

/** A mixture as {@link runIdentity} takes it: its sources' opened caches and the weights. */
export interface MixtureIdentityInput {
  sources: { name: string; weight: number; train: TokenCacheReader; validation: TokenCacheReader | undefined }[];
  weightsAt: { step: number; weights: Record<string, number> }[];
}

/** The identity of the data a run opened: caches by their contents' ledger, plus seed, shuffle and a mixture's sources and weights. */
export function runIdentity(
  train: TokenCacheReader,
  validation: TokenCacheReader | undefined,
  data: { seed: number; shuffle: boolean; mixture?: MixtureIdentityInput },
): RunIdentity {
  const m = data.mixture;
  return {
    data: {
      trainCache: cacheIdentity(train),
      validationCache: validation ? cacheIdentity(validation) : null,
      seed: data.seed,
      shuffle: data.shuffle,
      ...(m
        ? {
            mixture: {
              sources: m.sources.map((s) => ({
                name: s.name,
                weight: s.weight,
                trainCache: cacheIdentity(s.train),
                validationCache: s.validation ? cacheIdentity(s.validation) : null,
              })),
              weightsAt: m.weightsAt,
            },
          }
        : {}),
    },
  };
}

// A mixture without the caches' paths (contents decide), for comparison.
function mixtureKey(m: RunIdentity["data"]["mixture"]): string {
  if (!m) return "none";
  const c = (x: CacheIdentity | null) => (x ? { ...x, path: undefined } : null);
  return JSON.stringify({ sources: m.sources.map((s) => ({ ...s, trainCache: c(s.trainCache), validationCache: c(s.validationCache) })), weightsAt: m.weightsAt });
}

const show = (v: unknown) => (v === undefined ? "unset" : JSON.stringify(v));

function describeCache(c: CacheIdentity | null): string {
  return c === null ? "none" : `${c.path} (${c.totalDocuments.toLocaleString("en-US")} documents, ${c.totalTokens.toLocaleString("en-US")} tokens, tokenizer ${c.tokenizer})`;
}

function sameCache(a: CacheIdentity | null, b: CacheIdentity | null): boolean {
  if (a === null || b === null) return a === b;
  // A cache moved or reached through another path is the same data; contents decide.
  return a.tokenizer === b.tokenizer && a.vocabSize === b.vocabSize && a.totalTokens === b.totalTokens && a.totalDocuments === b.totalDocuments;
}

/**
 * The fields in which the config now differs from the run a checkpoint belongs to, each as
 * `field: <checkpoint> in the run, <now> now`. `stored.run` is absent in checkpoints written before
 * it existed: then only the model, tokenizer and data seed are compared.
 */
export function runDifferences(
  stored: { model: Record<string, unknown>; tokenizer: string; loader: { seed: number }; run?: RunIdentity | undefined },
  now: { model: ResolvedModelConfig; run: RunIdentity },
): string[] {
  const diffs: string[] = [];
  const nowModel = now.model as unknown as Record<string, unknown>;
  for (const key of [...new Set([...Object.keys(nowModel), ...Object.keys(stored.model)])]) {
    if (JSON.stringify(stored.model[key]) !== JSON.stringify(nowModel[key])) diffs.push(`model.${key}: ${show(stored.model[key])} in the run, ${show(nowModel[key])} now`);
  }
  const d = now.run.data;
  if (stored.run === undefined) {
    if (stored.tokenizer !== d.trainCache.tokenizer) diffs.push(`data.trainCache: tokenizer ${show(stored.tokenizer)} in the run, ${show(d.trainCache.tokenizer)} now`);
    if (stored.loader.seed !== d.seed) diffs.push(`data.seed: ${stored.loader.seed} in the run, ${d.seed} now`);
    return diffs;
  }
  const s = stored.run.data;
  if (!sameCache(s.trainCache, d.trainCache)) diffs.push(`data.trainCache: ${describeCache(s.trainCache)} in the run, ${describeCache(d.trainCache)} now`);
  if (!sameCache(s.validationCache, d.validationCache)) {
    diffs.push(`data.validationCache: ${describeCache(s.validationCache)} in the run, ${describeCache(d.validationCache)} now`);
  }
  if (mixtureKey(s.mixture) !== mixtureKey(d.mixture)) {
    const show = (m: RunIdentity["data"]["mixture"]) =>
      m
        ? m.sources.map((x) => `${x.name}×${x.weight} (${describeCache(x.trainCache)})`).join(", ") + (m.weightsAt.length ? `, weightsAt ${JSON.stringify(m.weightsAt)}` : "")
        : "none";
    diffs.push(`data.mixture: ${show(s.mixture)} in the run, ${show(d.mixture)} now`);
  }
  if (s.seed !== d.seed) diffs.push(`data.seed: ${s.seed} in the run, ${d.seed} now (data.seed, else trainer.seed)`);
  if (s.shuffle !== d.shuffle) diffs.push(`data.shuffle: ${s.shuffle} in the run, ${d.shuffle} now`);
  return diffs;
}

/**
 * Throws INVALID_CONFIG when `train` in `runDir` would not continue the run whose newest
 * checkpoint is `checkpoint`: the model or data differ (each differing field named), or the run
 * is already past `numTrainSteps`.
 */
export function checkContinuesRun(opts: { runDir: string; checkpoint: string; checkpointStep: number; numTrainSteps: number; differences: string[] }): void {
  const { runDir, checkpoint, checkpointStep, numTrainSteps, differences } = opts;
  if (differences.length > 0) {
    throw new LevanterError(
      "INVALID_CONFIG",
      `trainer.runDir ${runDir} holds a run with another config (newest checkpoint ${checkpoint}): ${differences.join("; ")}. ` +
        `Pick another trainer.runDir for a new run, or train with the run's config to continue it`,
    );
  }
  if (checkpointStep > numTrainSteps) {
    throw new LevanterError(
      "INVALID_CONFIG",
      `trainer.numTrainSteps is ${numTrainSteps}, but the run in ${runDir} is already past it, at step ${checkpointStep} (${checkpoint}). ` +
        `Raise trainer.numTrainSteps to at least ${checkpointStep} to continue it, or pick another trainer.runDir for a new run`,
    );
  }
}
