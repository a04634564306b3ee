// trainLm: the training loop (data, model, optimizer, evaluation, trackers, checkpoints, exact resume).
import { getIrisCtx } from "@marin/iris";
import * as tf from "@tensorflow/tfjs";
import { existsSync } from "node:fs";
import path from "node:path";
import { selectBackend, type BackendSelection } from "../backend.ts";
import { Checkpointer, type SavedCheckpoint } from "../checkpoint/checkpointer.ts";
import { MixtureLoader } from "../data/mixtureLoader.ts";
import { TokenLoader, ValidationBatches, type TokenBatch } from "../data/tokenLoader.ts";
import type { Tokenizer } from "../data/tokenizer.ts";
import { HfTokenizer } from "../data/hfTokenizer.ts";
import { LevanterError } from "../errors.ts";
import { log } from "../internal/log.ts";
import { Rng } from "../rng.ts";
import { resolveModelConfig, trainingFlopsPerToken, type ResolvedModelConfig } from "../models/modelConfig.ts";
import { TransformerLm, defaultDecayMask } from "../models/transformer.ts";
import { AdamW } from "../optim/adamw.ts";
import { lrSchedule } from "../optim/schedule.ts";
import { TokenCacheReader } from "../sharding/tokenCacheReader.ts";
import { tokenizerNamed } from "../data/tokenizerLookup.ts";
import { evaluateLm, type EvalResult } from "./evaluate.ts";
import { initializeDistributed, type Distributed } from "../parallel/distributed.ts";
import { agreeOnNativeGemm, nativeGemmEngine } from "../kernels/native/addon.ts";
import { dataParallelGradients, type SaveKind } from "./gradients.ts";
import { ShardedOptimizerState } from "./sharded.ts";
import { checkContinuesRun, runDifferences, runIdentity } from "../checkpoint/runIdentity.ts";
import { formatStatus, StatusReporter, type StatusSink } from "./status.ts";
import { assignParams, checkpointTokenizerFile, readTrainCheckpoint, resolveCheckpointDir, saveTrainState } from "../checkpoint/trainState.ts";
import { CompositeTracker, ConsoleTracker, JsonlTracker, TensorBoardTracker, type Tracker } from "./trackers.ts";
import { parseTrainLmConfig, type TrainLmConfig, type TrainLmConfigInput } from "./trainerConfig.ts";

/** What a hook sees after each step. */
export interface TrainStepInfo {
  /** Steps completed (the step index that just finished, plus one). */
  step: number;
  totalSteps: number;
  loss: number;
  learningRate: number;
  metrics: Record<string, number>;
  model: TransformerLm;
  /** The optimizer (its state is what a checkpoint stores). */
  optimizer: AdamW;
  /** True for the extra call every hook gets when training ends. */
  final: boolean;
}

/** A callback run every `every` steps, and once more when training ends. */
export interface TrainHook {
  every: number;
  fn: (info: TrainStepInfo) => void | Promise<void>;
}

/** Extras for {@link trainLm} that are code, not config. */
export interface TrainLmOptions {
  hooks?: TrainHook[];
  /** Where status reports go; default: the iris task's `reportStatus` when running inside one. */
  statusSink?: StatusSink;
  /** Save a checkpoint and stop at the next step boundary when this fires (default: on SIGTERM). */
  signal?: AbortSignal;
  /**
   * The data-parallel gang to train in (default: joined by itself inside an iris job with
   * `IRIS_NUM_TASKS > 1`, else one rank). Only rank 0 writes trackers, checkpoints and status.
   */
  distributed?: Distributed;
}

/** The outcome of {@link trainLm}. */
export interface TrainLmResult {
  /** Steps completed in total (including those before a resume). */
  step: number;
  resumedFrom?: number;
  stoppedEarly: boolean;
  /** Loss of the last step whose update was applied. */
  finalLoss?: number;
  /** Steps in this call whose loss or gradient norm was not finite and whose update was skipped. */
  skippedSteps: number;
  eval?: EvalResult;
  /** With `data.mixture`: the last evaluation of each source that has a validation cache, by name. */
  evalBySource?: Record<string, EvalResult>;
  parameterCount: number;
  checkpoint?: string;
  backend: BackendSelection;
  /** This process's data-parallel rank and the number of ranks. */
  rank: number;
  world: number;
}

/**
 * Trains a decoder-only LM from a config (`model`, `data`, `optimizer`, `trainer`; see
 * {@link TrainLmConfigSchema}). Resumes bit-exactly from the newest complete checkpoint, logs
 * `train/loss`, `eval/loss`, `eval/bpb`, `optim/learning_rate`, `throughput/tokens_per_second`
 * and `throughput/mfu` to its trackers and, inside an iris task, to `reportStatus`. Always ends
 * with a permanent checkpoint of its last step; on SIGTERM it saves one and stops early.
 *
 * @example await trainLm(loadTrainLmConfig("tiny.yaml", ["--trainer.numTrainSteps=50"]));
 */
export async function trainLm(input: TrainLmConfig | TrainLmConfigInput, options: TrainLmOptions = {}): Promise<TrainLmResult> {
  const config = parseTrainLmConfig(input);
  const { trainer: tc, data: dc } = config;
  const backend = await selectBackend({ ...(tc.backend ? { force: tc.backend } : {}), ...(tc.threads ? { threads: tc.threads } : {}) });
  const readers: TokenCacheReader[] = [];
  const open = async (dir: string) => {
    const r = await TokenCacheReader.open(dir);
    readers.push(r);
    return r;
  };
  let model: TransformerLm | undefined;
  let dist: Distributed | undefined;
  const ownDist = options.distributed === undefined;
  let optimizer: AdamW | undefined;
  const abort = new AbortController();
  const onSigterm = () => abort.abort(new Error("SIGTERM"));
  process.on("SIGTERM", onSigterm);
  const onAbort = () => abort.abort(options.signal?.reason);
  // An already-aborted signal never fires "abort" again: honour it up front.
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    // One train cache, or a mixture's: every source made by the same tokenizer.
    const sources = dc.mixture
      ? await Promise.all(
          dc.mixture.sources.map(async (s) => ({ ...s, train: await open(s.trainCache), validation: s.validationCache ? await open(s.validationCache) : undefined })),
        )
      : undefined;
    const reader = sources ? sources[0]!.train : await open(dc.trainCache!);
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
    const validation = dc.validationCache ? await open(dc.validationCache) : undefined;
    dist = options.distributed ?? (await initializeDistributed());
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
    model = TransformerLm.init(modelConfig, rng);
    if (init) assignParams(model, init.params, init.dir);
    const noDecay = config.optimizer.noDecay?.map((r) => new RegExp(r));
    // ZeRO-1 on a gang: each rank keeps and updates the Adam moments of its own tensors only.
    const sharded = world > 1 && dist.gang ? new ShardedOptimizerState(model, dist.gang) : undefined;
    // What a peer may legitimately send ahead (a shard of float64 partial sums, both Adam moments
    // of its tensors for a save) stays under 16 bytes a parameter: the mailbox's bound follows the model.
    if (dist.gang) dist.gang.maxBufferedBytes = Math.max(dist.gang.maxBufferedBytes, 16 * model.parameterCount() + 64 * 2 ** 20);
    optimizer = new AdamW(model.params, {
      ...config.optimizer,
      decayMask: noDecay ? (n) => !noDecay.some((r) => r.test(n)) : defaultDecayMask,
      ...(sharded ? { owned: sharded.ownedNames() } : {}),
    });
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
    let lastSavedStep: number | undefined;
    /** The newest checkpoint of this run (temporary or permanent), reported to iris as `checkpoint/step`. */
    let lastCheckpointStep: number | undefined;
    const run = runIdentity(reader, validation, {
      seed: loaderSeed,
      shuffle: dc.shuffle,
      ...(sources ? { mixture: { sources: sources.map((s) => ({ name: s.name, weight: s.weight, train: s.train, validation: s.validation })), weightsAt: dc.mixture?.weightsAt ?? [] } } : {}),
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
          differences: runDifferences(ckpt.state, { model: modelConfig, run }),
        });
        assignParams(model, ckpt.params, found.path);
        optimizer.load(ckpt.optimizer, ckpt.state.optimizer);
        rng.state = ckpt.state.rng;
        startStep = resumedFrom = ckpt.state.step;
        const l = ckpt.state.loader;
        if (l.batchSize !== tc.batchSize) {
          // Still resumable (seed and seqLen were checked above), but the batches after this step
          // differ from the interrupted run's.
          log("warn", `data order changed since the checkpoint: trainer.batchSize ${l.batchSize} there, ${tc.batchSize} now`, { checkpoint: l, now: { seed: loaderSeed, batchSize: tc.batchSize, seqLen } });
        }
        if (!found.metadata.isTemporary) lastSavedStep = startStep;
        log("info", startStep === tc.numTrainSteps ? "already finished" : "resumed", { checkpoint: found.path, step: startStep });
      }
    }

    // Every rank read the same checkpoint (rank 0 writes, all read): check they agree on where to start.
    const starts = await dist.allGather(startStep);
    if (starts.some((s) => s !== startStep)) {
      throw new LevanterError("DISTRIBUTED", `ranks resumed from different steps (${starts.map((s, r) => `rank ${r}: ${s}`).join(", ")}); is ${checkpointer.basePath} shared by every rank?`);
    }

    const trackers: Tracker[] = [];
    if (lead && tc.trackers.includes("console")) trackers.push(new ConsoleTracker(tc.numTrainSteps, startStep));
    if (lead && tc.trackers.includes("jsonl")) trackers.push(new JsonlTracker(path.join(tc.runDir, "metrics.jsonl"), { resumeFrom: startStep }));
    if (lead && tc.trackers.includes("tensorboard")) trackers.push(new TensorBoardTracker(path.join(tc.runDir, "tensorboard")));
    const tracker = new CompositeTracker(trackers);
    const sink = lead ? (options.statusSink ?? (await irisStatusSink())) : undefined;
    const reporter = sink ? new StatusReporter(sink, tc.statusIntervalSeconds * 1000) : undefined;

    const schedule = lrSchedule(config.optimizer, tc.numTrainSteps);
    const flopsPerToken = trainingFlopsPerToken(modelConfig);
    const tokensPerStep = tc.batchSize * seqLen;
    const hooks = lead ? (options.hooks ?? []) : [];
    log("info", "training", { parameters: model.parameterCount(), startStep, totalSteps: tc.numTrainSteps, backend: backend.name, world, microBatches });

    // Rank 0 writes. Every rank calls this at the same step (rank 0's decision came with the
    // step's statistics, `decided`, its kind as `voted`; a final save is `force`d everywhere);
    // with ZeRO-1 rank 0 first gathers the others' moments. Every rank then knows whether a
    // permanent checkpoint of `step` exists.
    const save = async (step: number, force: boolean, decided?: SavedCheckpoint, voted?: SaveKind) => {
      const others = sharded ? await sharded.gatherMoments(optimizer!) : undefined;
      if (!lead) {
        if (force || voted === "permanent") lastSavedStep = step;
        return undefined;
      }
      const saved = decided ?? checkpointer.decide(step, { force });
      if (!saved) return undefined;
      await checkpointer.commit(saved, (dir, isTemporary) =>
        saveTrainState(dir, isTemporary, {
          step,
          model: model!,
          optimizer: others ? { state: () => optimizer!.state(others) } : optimizer!,
          rng,
          tokenizer: tokenizer.name,
          ...(tokenizer instanceof HfTokenizer ? { tokenizerFiles: tokenizer.files } : {}),
          loader: { seed: loaderSeed, step, batchSize: tc.batchSize, seqLen },
          run,
          ...(init?.tokenizerDir ? { tokenizerDir: init.tokenizerDir } : {}),
        }),
      );
      if (!saved.isTemporary) lastSavedStep = step;
      lastCheckpointStep = step;
      return saved;
    };
    const evalOn = (cache: TokenCacheReader) => evaluateLm(model!, new ValidationBatches(cache, { seqLen, batchSize: tc.batchSize }), tokenizer, tc.maxEvalBatches);
    const runEval = (): EvalResult | undefined => (lead && validation ? evalOn(validation) : undefined);
    // Each mixture source with a validation cache, on its own.
    const runSourceEvals = (): Record<string, EvalResult> | undefined => {
      const withValidation = lead ? (sources ?? []).filter((s) => s.validation) : [];
      return withValidation.length ? Object.fromEntries(withValidation.map((s) => [s.name, evalOn(s.validation!)])) : undefined;
    };

    let lastLoss: number | undefined;
    let lastEval: EvalResult | undefined;
    let lastSourceEvals: Record<string, EvalResult> | undefined;
    let lastMetrics: Record<string, number> = {};
    let secondsPerStep: number | undefined;
    let skippedSteps = 0;
    let step = startStep;
    // A gang stops together: a stop request on any rank is voted with the step's statistics.
    let stopVoted = false;
    const stopping = () => (world === 1 ? abort.signal.aborted : stopVoted);
    for (; step < tc.numTrainSteps && !stopping(); step++) {
      const t0 = performance.now();
      const batch = loader.batch(step);
      const lr = schedule(step);
      // Rank 0 decides now whether a checkpoint follows this step (the interval clock read before
      // the step, not after); on a gang its vote travels with the step's statistics.
      const decision = lead && step + 1 < tc.numTrainSteps ? checkpointer.decide(step + 1) : undefined;
      const { loss, grads, stop, save: saveVoted, timing } = await dataParallelGradients(model, batch.inputs, batch.targets, batch.size, microBatches, dist.gang, {
        stopRequested: abort.signal.aborted,
        ...(decision ? { saveRequested: decision.isTemporary ? "temporary" : "permanent" } : {}),
        ...(sharded ? { zero: sharded.plan } : {}),
      });
      stopVoted = stop;
      let gradNorm: number;
      try {
        gradNorm = sharded ? await sharded.globalNorm(optimizer, grads) : optimizer.globalNorm(grads);
        // Checked before anything is applied: a non-finite update would poison the parameters and
        // Adam's moments for good.
        if (!Number.isFinite(loss) || !Number.isFinite(gradNorm)) {
          const what = `train/loss is ${loss} and optim/grad_norm is ${gradNorm} at step ${step}`;
          if (tc.crashOnNonFinite) throw new LevanterError("NON_FINITE_LOSS", `${what}; the update was not applied`);
          skippedSteps++;
          log("warn", "non-finite step skipped", { step, loss, gradNorm, skippedSteps });
        } else {
          optimizer.apply(grads, lr, gradNorm);
          await sharded?.gatherParams();
        }
      } finally {
        tf.dispose([...grads.values()]);
      }
      const skipped = !Number.isFinite(loss) || !Number.isFinite(gradNorm);
      const seconds = (performance.now() - t0) / 1000;
      secondsPerStep = secondsPerStep === undefined ? seconds : 0.9 * secondsPerStep + 0.1 * seconds;
      const done = step + 1;
      const tps = tokensPerStep / seconds;
      const metrics: Record<string, number> = {
        "train/loss": loss,
        "optim/learning_rate": lr,
        "optim/grad_norm": gradNorm,
        "throughput/tokens_per_second": tps,
        "throughput/mfu": ((flopsPerToken * tps) / tc.peakFlops) * 100,
        "throughput/duration": seconds,
        "train/skipped_steps": skippedSteps,
        // Where rank 0's step went across the gang: its forward/backward, waiting for the slowest
        // rank (the statistics exchange), the all-reduce.
        ...(world > 1 ? { "parallel/compute_seconds": timing.compute / 1000, "parallel/wait_seconds": timing.stats / 1000, "parallel/reduce_seconds": timing.reduce / 1000 } : {}),
      };
      if (!skipped) lastLoss = loss;
      if (done % tc.stepsPerEval === 0 || done === tc.numTrainSteps) {
        lastEval = runEval();
        if (lastEval) Object.assign(metrics, { "eval/loss": lastEval.loss, "eval/bpb": lastEval.bpb });
        lastSourceEvals = runSourceEvals();
        for (const [name, e] of Object.entries(lastSourceEvals ?? {})) Object.assign(metrics, { [`eval/${name}/loss`]: e.loss, [`eval/${name}/bpb`]: e.bpb });
      }
      lastMetrics = metrics;
      if (done % tc.logEvery === 0 || Object.keys(metrics).some((k) => k.startsWith("eval/")) || done === tc.numTrainSteps) tracker.log(done, metrics);
      for (const h of hooks) {
        if (done % h.every === 0) await h.fn({ step: done, totalSteps: tc.numTrainSteps, loss, learningRate: lr, metrics, model, optimizer, final: false });
      }
      reporter?.maybeReport(
        formatStatus({ step: done, totalSteps: tc.numTrainSteps, loss, tokensPerSecond: tps, mfu: metrics["throughput/mfu"]!, secondsPerStep }),
        { step: done, ...metrics, ...(lastCheckpointStep !== undefined ? { "checkpoint/step": lastCheckpointStep } : {}) },
      );
      if (saveVoted && done < tc.numTrainSteps && !stopping()) await save(done, false, decision, saveVoted);
    }

    // The end (or a stop request): a permanent checkpoint of the last step, final hooks, reports.
    const stoppedEarly = step < tc.numTrainSteps;
    if (lastSavedStep !== step) await save(step, true);
    for (const h of hooks) {
      await h.fn({ step, totalSteps: tc.numTrainSteps, loss: lastLoss ?? Number.NaN, learningRate: schedule(Math.max(0, step - 1)), metrics: lastMetrics, model, optimizer, final: true });
    }
    reporter?.maybeReport(
      formatStatus({ step, totalSteps: tc.numTrainSteps, ...(lastLoss !== undefined ? { loss: lastLoss } : {}) }) + (stoppedEarly ? " · stopped" : ""),
      { step, ...lastMetrics, ...(lastCheckpointStep !== undefined ? { "checkpoint/step": lastCheckpointStep } : {}) },
      true,
    );
    await reporter?.flush();
    tracker.finish();
    log("info", stoppedEarly ? "stopped early" : "finished", { step, loss: lastLoss, evalLoss: lastEval?.loss, skippedSteps });
    // A gang ends together: every rank waits here until all have said goodbye, so none exits
    // (and closes its links) while another is still saving, evaluating or in the last collective.
    if (ownDist) await dist.close({ waitForPeers: true });
    return {
      step,
      ...(resumedFrom !== undefined ? { resumedFrom } : {}),
      stoppedEarly,
      skippedSteps,
      ...(lastLoss !== undefined ? { finalLoss: lastLoss } : {}),
      ...(lastEval ? { eval: lastEval } : {}),
      ...(lastSourceEvals ? { evalBySource: lastSourceEvals } : {}),
      parameterCount: model.parameterCount(),
      checkpoint: path.join(checkpointer.basePath, `step-${step}`),
      backend,
      rank,
      world,
    };
  } finally {
    process.off("SIGTERM", onSigterm);
    options.signal?.removeEventListener("abort", onAbort);
    model?.dispose();
    if (ownDist) await dist?.close();
    optimizer?.dispose();
    for (const r of readers) r.close();
  }
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

// Inside an iris task, status goes to the controller; outside, nowhere.
async function irisStatusSink(): Promise<StatusSink | undefined> {
  const ctx = getIrisCtx();
  return ctx ? (text, metrics) => ctx.reportStatus(text, metrics) : undefined;
}
