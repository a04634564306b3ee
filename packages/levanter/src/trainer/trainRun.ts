// A training run set up once: backend, data readers, the gang, model, optimizer, loader,
// checkpointer and the resume point. trainLm (trainLm.ts) then runs steps (trainStep.ts) with hooks
// (loopHooks.ts) on what this returns.
import { existsSync } from "node:fs";
import path from "node:path";
import { selectBackend, type BackendSelection } from "../backend.ts";
import { Checkpointer } from "../checkpoint/checkpointer.ts";
import { checkContinuesRun, runDifferences, runIdentity } from "../checkpoint/runIdentity.ts";
import { assignParams, checkpointTokenizerFile, readTrainCheckpoint, resolveCheckpointDir } from "../checkpoint/trainState.ts";
import { MixtureLoader } from "../data/mixtureLoader.ts";
import { TokenLoader, type TokenBatch } from "../data/tokenLoader.ts";
import type { Tokenizer } from "../data/tokenizer.ts";
import { tokenizerNamed } from "../data/tokenizerLookup.ts";
import { initializeDistributed, type Distributed } from "../parallel/distributed.ts";
import { LevanterError } from "../errors.ts";
import { log } from "../internal/log.ts";
import { agreeOnNativeGemm, nativeGemmEngine } from "../kernels/native/addon.ts";
import { resolveModelConfig, trainingFlopsPerToken, type ResolvedModelConfig } from "../models/modelConfig.ts";
import { TransformerLm, defaultDecayMask } from "../models/transformer.ts";
import { AdamW } from "../optim/adamw.ts";
import { lrSchedule, type LrSchedule } from "../optim/schedule.ts";
import { Rng } from "../rng.ts";
import { TokenCacheReader } from "../sharding/tokenCacheReader.ts";
import { ShardedOptimizerState } from "./sharded.ts";
import type { TrainLmConfig } from "./trainerConfig.ts";

/** A mixture source with its opened caches. */
export interface OpenSource {
  name: string;
  weight: number;
  train: TokenCacheReader;
  validation: TokenCacheReader | undefined;
}

/**
 * What a run holds that must be released whatever happens (filled in as setup creates it), and
 * its stop signal: SIGTERM or the caller's `signal` asks the loop to save and stop.
 */
export class RunResources {
  readonly readers: TokenCacheReader[] = [];
  model: TransformerLm | undefined;
  optimizer: AdamW | undefined;
  dist: Distributed | undefined;
  /** Whether this run joined the gang itself (and so closes it). */
  readonly ownDist: boolean;
  readonly abort = new AbortController();
  readonly #detach: () => void;

  constructor(signal: AbortSignal | undefined, ownDist: boolean) {
    this.ownDist = ownDist;
    const onSigterm = () => this.abort.abort(new Error("SIGTERM"));
    process.on("SIGTERM", onSigterm);
    const onAbort = () => this.abort.abort(signal?.reason);
    // An already-aborted signal never fires "abort" again: honour it up front.
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
    this.#detach = () => {
      process.off("SIGTERM", onSigterm);
      signal?.removeEventListener("abort", onAbort);
    };
  }

  async open(dir: string): Promise<TokenCacheReader> {
    const r = await TokenCacheReader.open(dir);
    this.readers.push(r);
    return r;
  }

  async release(): Promise<void> {
    this.#detach();
    this.model?.dispose();
    if (this.ownDist) await this.dist?.close();
    this.optimizer?.dispose();
    for (const r of this.readers) r.close();
  }
}

/** A run, set up: everything the steps and hooks read. */
export interface TrainRun {
  config: TrainLmConfig;
  backend: BackendSelection;
  dist: Distributed;
  rank: number;
  world: number;
  /** Rank 0: the one that writes checkpoints, trackers and status. */
  lead: boolean;
  microBatches: number;
  modelConfig: ResolvedModelConfig;
  tokenizer: Tokenizer;
  /** The checkpoint folder whose tokenizer files the run's checkpoints carry (trainer.initializeFrom). */
  tokenizerDir: string | undefined;
  model: TransformerLm;
  optimizer: AdamW;
  /** ZeRO-1 on a gang: each rank keeps and updates the Adam moments of its own tensors only. */
  sharded: ShardedOptimizerState | undefined;
  rng: Rng;
  loader: { batch(step: number): TokenBatch };
  loaderSeed: number;
  validation: TokenCacheReader | undefined;
  sources: OpenSource[] | undefined;
  checkpointer: Checkpointer;
  identity: ReturnType<typeof runIdentity>;
  /** The first step to train (0, or the resumed checkpoint's step). */
  startStep: number;
  resumedFrom: number | undefined;
  /** The newest permanent checkpoint's step when the run starts (a resumed permanent one). */
  savedStep: number | undefined;
  schedule: LrSchedule;
  flopsPerToken: number;
  tokensPerStep: number;
  abort: AbortSignal;
}

/** Sets a run up; what it creates is registered in `res` (released by the caller). */
export async function setupRun(config: TrainLmConfig, options: { distributed?: Distributed | undefined }, res: RunResources): Promise<TrainRun> {
  const { trainer: tc, data: dc } = config;
  const backend = await selectBackend({ ...(tc.backend ? { force: tc.backend } : {}), ...(tc.threads ? { threads: tc.threads } : {}) });
  // One train cache, or a mixture's: every source made by the same tokenizer.
  const sources = dc.mixture
    ? await Promise.all(
        dc.mixture.sources.map(async (s): Promise<OpenSource> => ({
          name: s.name,
          weight: s.weight,
          train: await res.open(s.trainCache),
          validation: s.validationCache ? await res.open(s.validationCache) : undefined,
        })),
      )
    : undefined;
  const reader = sources ? sources[0]!.train : await res.open(dc.trainCache!);
  for (const s of sources ?? []) {
    for (const c of [s.train, s.validation]) {
      if (c && (c.ledger.tokenizer !== reader.ledger.tokenizer || c.ledger.vocabSize !== reader.ledger.vocabSize)) {
        throw new LevanterError(
          "DATA",
          `data.mixture: ${c.dir} was made by tokenizer "${c.ledger.tokenizer}" (vocabulary ${c.ledger.vocabSize}), ${reader.dir} by "${reader.ledger.tokenizer}" (vocabulary ${reader.ledger.vocabSize}); a mixture needs one tokenizer`,
        );
      }
    }
  }
  const validation = dc.validationCache ? await res.open(dc.validationCache) : undefined;
  const dist = options.distributed ?? (await initializeDistributed());
  res.dist = dist;
  const { rank, world } = dist;
  const lead = rank === 0;
  // Every rank multiplies with one GEMM engine (rank 0's calibrated pick): ranks that picked
  // differently would not give one rank's bits.
  if (world > 1 && backend.name === "native") {
    const picks = await dist.allGather(nativeGemmEngine() ?? null);
    if (picks[0] && picks.some((p) => p !== picks[0])) {
      agreeOnNativeGemm(picks[0]);
      log("info", "native GEMM engine agreed with rank 0", { engine: picks[0], picks });
    }
  }
  const microBatches = tc.microBatches ?? (tc.microBatchSize ? tc.batchSize / tc.microBatchSize : world);
  if (microBatches < world || tc.batchSize % microBatches !== 0) {
    throw new LevanterError(
      "INVALID_CONFIG",
      `trainer.microBatches: ${microBatches} micro-batches of a batch of ${tc.batchSize} cannot be spread over ${world} ranks (need a divisor of batchSize, at least one per rank)`,
    );
  }
  // Started from a checkpoint (trainer.initializeFrom): its model shape, parameters and tokenizer.
  const init = tc.initializeFrom ? await initialModel(tc.initializeFrom, config, reader) : undefined;
  const tokenizer = init ? init.tokenizer : await tokenizerFor(reader.ledger.tokenizer, dc.tokenizerJson, reader.dir);
  const modelConfig = init ? init.modelConfig : resolveModelConfig(config.model, reader.ledger.vocabSize);
  const seqLen = modelConfig.seqLen;
  if (backend.name === "wasm") checkWasmMemory(modelConfig, tc.batchSize / microBatches);
  const rng = new Rng(tc.seed);
  const model = TransformerLm.init(modelConfig, rng);
  res.model = model;
  if (init) assignParams(model, init.params, init.dir);
  const noDecay = config.optimizer.noDecay?.map((r) => new RegExp(r));
  const sharded = world > 1 && dist.gang ? new ShardedOptimizerState(model, dist.gang) : undefined;
  // What a peer may legitimately send ahead (a shard of float64 partial sums, both Adam moments
  // of its tensors for a save) stays under 16 bytes a parameter: the mailbox's bound follows the model.
  if (dist.gang) dist.gang.maxBufferedBytes = Math.max(dist.gang.maxBufferedBytes, 16 * model.parameterCount() + 64 * 2 ** 20);
  const optimizer = new AdamW(model.params, {
    ...config.optimizer,
    decayMask: noDecay ? (n) => !noDecay.some((r) => r.test(n)) : defaultDecayMask,
    ...(sharded ? { owned: sharded.ownedNames() } : {}),
  });
  res.optimizer = optimizer;
  const loaderSeed = dc.seed ?? tc.seed;
  const loader: { batch(step: number): TokenBatch } = sources
    ? new MixtureLoader(
        sources.map((s) => ({ name: s.name, source: s.train, weight: s.weight })),
        { seqLen, batchSize: tc.batchSize, seed: loaderSeed, shuffle: dc.shuffle, ...(dc.mixture?.weightsAt ? { stages: dc.mixture.weightsAt } : {}) },
      )
    : new TokenLoader(reader, { seqLen, batchSize: tc.batchSize, seed: loaderSeed, shuffle: dc.shuffle });
  const checkpointer = new Checkpointer({ basePath: path.join(tc.runDir, "checkpoints"), ...tc.checkpointer });

  let startStep = 0;
  let resumedFrom: number | undefined;
  let savedStep: number | undefined;
  const identity = runIdentity(reader, validation, {
    seed: loaderSeed,
    shuffle: dc.shuffle,
    ...(sources
      ? { mixture: { sources: sources.map((s) => ({ name: s.name, weight: s.weight, train: s.train, validation: s.validation })), weightsAt: dc.mixture?.weightsAt ?? [] } }
      : {}),
  });
  if (tc.resume) {
    const found = await checkpointer.latest({ damaged: tc.requireCheckpoint ? "error" : "warn" });
    if (!found && tc.requireCheckpoint) {
      throw new LevanterError("CHECKPOINT_NOT_FOUND", `trainer.requireCheckpoint: no complete checkpoint under ${checkpointer.roots.join(" or ")}`);
    }
    if (found) {
      const ckpt = await readTrainCheckpoint(found.path);
      checkContinuesRun({
        runDir: tc.runDir,
        checkpoint: found.path,
        checkpointStep: ckpt.state.step,
        numTrainSteps: tc.numTrainSteps,
        differences: runDifferences(ckpt.state, { model: modelConfig, run: identity }),
      });
      assignParams(model, ckpt.params, found.path);
      optimizer.load(ckpt.optimizer, ckpt.state.optimizer);
      rng.state = ckpt.state.rng;
      startStep = resumedFrom = ckpt.state.step;
      const l = ckpt.state.loader;
      if (l.batchSize !== tc.batchSize) {
        // Still resumable (seed and seqLen were checked above), but the batches after this step
        // differ from the interrupted run's.
        log("warn", `data order changed since the checkpoint: trainer.batchSize ${l.batchSize} there, ${tc.batchSize} now`, {
          checkpoint: l,
          now: { seed: loaderSeed, batchSize: tc.batchSize, seqLen },
        });
      }
      if (!found.metadata.isTemporary) savedStep = startStep;
      log("info", startStep === tc.numTrainSteps ? "already finished" : "resumed", { checkpoint: found.path, step: startStep });
    }
  }

  // Every rank read the same checkpoint (rank 0 writes, all read): check they agree on where to start.
  const starts = await dist.allGather(startStep);
  if (starts.some((s) => s !== startStep)) {
    throw new LevanterError(
      "DISTRIBUTED",
      `ranks resumed from different steps (${starts.map((s, r) => `rank ${r}: ${s}`).join(", ")}); is ${checkpointer.basePath} shared by every rank?`,
    );
  }
  return {
    config,
    backend,
    dist,
    rank,
    world,
    lead,
    microBatches,
    modelConfig,
    tokenizer,
    tokenizerDir: init?.tokenizerDir,
    model,
    optimizer,
    sharded,
    rng,
    loader,
    loaderSeed,
    validation,
    sources,
    checkpointer,
    identity,
    startStep,
    resumedFrom,
    savedStep,
    schedule: lrSchedule(config.optimizer, tc.numTrainSteps),
    flopsPerToken: trainingFlopsPerToken(modelConfig),
    tokensPerStep: tc.batchSize * seqLen,
    abort: res.abort.signal,
  };
}

/**
 * The model a run starts from (`trainer.initializeFrom`): the checkpoint's config (model fields the
 * config wrote must agree: INVALID_CONFIG naming each), its parameters, and the tokenizer: a given
 * `data.tokenizerJson`, else the one the checkpoint carries (the cache must be made by it: the
 * same name, or an HF cache made by `levanter tokenize`, of the same vocabulary size).
 */
async function initialModel(
  from: string,
  config: TrainLmConfig,
  cache: { dir: string; ledger: { tokenizer: string; vocabSize: number } },
): Promise<{ dir: string; modelConfig: ResolvedModelConfig; params: Map<string, { shape: number[]; data: Float32Array }>; tokenizer: Tokenizer; tokenizerDir?: string }> {
  const ledger = cache.ledger;
  const dir = await resolveCheckpointDir(from);
  const ckpt = await readTrainCheckpoint(dir);
  const stored = ckpt.modelConfig as unknown as Record<string, unknown>;
  const mine = config.model as unknown as Record<string, unknown>;
  const diffs = (config.trainer.initializeModelFields ?? []).filter((k) => JSON.stringify(mine[k]) !== JSON.stringify(stored[k]));
  if (diffs.length) {
    throw new LevanterError(
      "INVALID_CONFIG",
      `trainer.initializeFrom: the model comes from ${dir}, but the config sets ${diffs.map((k) => `model.${k}: ${JSON.stringify(mine[k])} (the checkpoint has ${JSON.stringify(stored[k]) ?? "none"})`).join("; ")}`,
    );
  }
  const modelConfig = resolveModelConfig(ckpt.modelConfig, ledger.vocabSize);
  const name = ckpt.state.tokenizer;
  const carried = await checkpointTokenizerFile(dir);
  let tokenizer: Tokenizer;
  if (config.data.tokenizerJson) tokenizer = await tokenizerNamed(ledger.tokenizer, config.data.tokenizerJson);
  else if (name === "byte" || !carried) {
    if (ledger.tokenizer !== name) throw new LevanterError("DATA", `${cache.dir}: made by tokenizer "${ledger.tokenizer}", the checkpoint ${dir} by "${name}"`);
    tokenizer = await tokenizerFor(name, undefined, cache.dir);
  } else {
    tokenizer = await tokenizerNamed(ledger.tokenizer, carried);
    if ((ledger.tokenizer !== name && ledger.tokenizer !== "hf") || ledger.vocabSize !== tokenizer.vocabSize) {
      throw new LevanterError(
        "DATA",
        `${cache.dir}: made by tokenizer "${ledger.tokenizer}" (vocabulary ${ledger.vocabSize}), not by the tokenizer ${dir} carries ("${name}", vocabulary ${tokenizer.vocabSize}); set data.tokenizerJson if it is the same`,
      );
    }
  }
  return { dir, modelConfig, params: ckpt.params, tokenizer, ...(carried && !config.data.tokenizerJson ? { tokenizerDir: dir } : {}) };
}

// A cache made by a tokenizer other than "byte" names its tokenizer.json through
// data.tokenizerJson or holds it (the tokenize step records it there).
async function tokenizerFor(name: string, tokenizerJson: string | undefined, cacheDir: string): Promise<Tokenizer> {
  if (name !== "byte" && !tokenizerJson && !existsSync(path.join(cacheDir, "tokenizer.json"))) {
    throw new LevanterError("INVALID_CONFIG", `data.tokenizerJson: required, the cache was made by tokenizer "${name}" (not "byte") and holds no tokenizer.json`);
  }
  return tokenizerNamed(name, tokenizerJson, [cacheDir]);
}

// wasm's heap stops at ~4 GiB with "memory access out of bounds" rather than a clear OOM: refuse
// configs that cannot fit. Parameters + gradients + two Adam moments (16 B/param) plus a rough
// bound on the activations kept for backward.
function checkWasmMemory(cfg: ResolvedModelConfig, rows: number): void {
  const { dModel: d, dFF: f, nLayers: l, nHeads: h, seqLen: t, vocabSize: v } = cfg;
  const params = l * (4 * d * d + (cfg.activation === "swiglu" ? 3 : 2) * d * f) + (cfg.tieEmbeddings ? 1 : 2) * v * d + t * d;
  const activations = 4 * rows * t * (l * (16 * d + 3 * f + 3 * h * t) + 4 * v);
  const bytes = 16 * params + activations;
  const limit = 3.5 * 2 ** 30;
  if (bytes > limit) {
    throw new LevanterError(
      "INVALID_CONFIG",
      `model: ~${(bytes / 2 ** 30).toFixed(1)} GiB needed, above the wasm backend's ~4 GiB heap; lower trainer.microBatchSize or the model size`,
    );
  }
}
