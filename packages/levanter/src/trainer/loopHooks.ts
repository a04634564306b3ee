// What trainLm's loop does around each step besides training: evaluation, trackers, the caller's
// hooks, status reports and checkpoints, each a hook with the same two calls. After every step
// the loop calls `afterStep` in the order evaluation → trackers → caller's hooks → status →
// checkpoints (evaluation adds its metrics first, so the others see them); at the end `atEnd` in
// the order checkpoints → caller's hooks → status → trackers (the final checkpoint exists before
// anything reports the end). Only rank 0 tracks, reports and writes.
import { getIrisCtx } from "@marin/iris/client";
import path from "node:path";
import type { SavedCheckpoint } from "../checkpoint/checkpointer.ts";
import { saveTrainState } from "../checkpoint/trainState.ts";
import { HfTokenizer } from "../data/hfTokenizer.ts";
import { ValidationBatches } from "../data/tokenLoader.ts";
import type { TokenCacheReader } from "../sharding/tokenCacheReader.ts";
import { evaluateLm, type EvalResult } from "./evaluate.ts";
import type { SaveKind } from "./gradients.ts";
import { formatStatus, StatusReporter, type StatusSink } from "./status.ts";
import { CompositeTracker, ConsoleTracker, JsonlTracker, TensorBoardTracker, type Tracker } from "./trackers.ts";
import type { TrainHook } from "./trainTypes.ts";
import type { TrainRun } from "./trainRun.ts";
import type { StepOutcome } from "./trainStep.ts";

/** How the loop ended. */
export interface LoopEnd {
  /** Steps completed in total. */
  step: number;
  stoppedEarly: boolean;
  /** Loss of the last step whose update was applied. */
  lastLoss: number | undefined;
  /** The last step's metrics (with its evaluation, if it had one). */
  lastMetrics: Record<string, number>;
}

/** One concern of the loop (see the file comment). */
export interface LoopHook {
  afterStep?(s: StepOutcome): void | Promise<void>;
  atEnd?(e: LoopEnd): void | Promise<void>;
}

/** Evaluation every `trainer.stepsPerEval` steps and after the last (rank 0, with a validation cache). */
export class EvaluationHook implements LoopHook {
  readonly #run: TrainRun;
  lastEval: EvalResult | undefined;
  /** With a mixture: each source that has a validation cache, on its own. */
  lastSourceEvals: Record<string, EvalResult> | undefined;

  constructor(run: TrainRun) {
    this.#run = run;
  }

  afterStep(s: StepOutcome): void {
    const tc = this.#run.config.trainer;
    if (s.done % tc.stepsPerEval !== 0 && s.done !== tc.numTrainSteps) return;
    const r = this.#run;
    this.lastEval = r.lead && r.validation ? this.#evalOn(r.validation) : undefined;
    if (this.lastEval) Object.assign(s.metrics, { "eval/loss": this.lastEval.loss, "eval/bpb": this.lastEval.bpb });
    const withValidation = r.lead ? (r.sources ?? []).filter((x) => x.validation) : [];
    this.lastSourceEvals = withValidation.length ? Object.fromEntries(withValidation.map((x) => [x.name, this.#evalOn(x.validation!)])) : undefined;
    for (const [name, e] of Object.entries(this.lastSourceEvals ?? {})) Object.assign(s.metrics, { [`eval/${name}/loss`]: e.loss, [`eval/${name}/bpb`]: e.bpb });
  }

  #evalOn(cache: TokenCacheReader): EvalResult {
    const r = this.#run;
    const tc = r.config.trainer;
    return evaluateLm(r.model, new ValidationBatches(cache, { seqLen: r.modelConfig.seqLen, batchSize: tc.batchSize }), r.tokenizer, tc.maxEvalBatches);
  }
}

/** The configured trackers (console, metrics.jsonl, tensorboard): every `logEvery` steps, every evaluation, the last step. */
export class TrackerHook implements LoopHook {
  readonly #run: TrainRun;
  readonly #tracker: CompositeTracker;

  constructor(run: TrainRun) {
    this.#run = run;
    const tc = run.config.trainer;
    const trackers: Tracker[] = [];
    if (run.lead && tc.trackers.includes("console")) trackers.push(new ConsoleTracker(tc.numTrainSteps, run.startStep));
    if (run.lead && tc.trackers.includes("jsonl")) trackers.push(new JsonlTracker(path.join(tc.runDir, "metrics.jsonl"), { resumeFrom: run.startStep }));
    if (run.lead && tc.trackers.includes("tensorboard")) trackers.push(new TensorBoardTracker(path.join(tc.runDir, "tensorboard")));
    this.#tracker = new CompositeTracker(trackers);
  }

  afterStep(s: StepOutcome): void {
    const tc = this.#run.config.trainer;
    if (s.done % tc.logEvery === 0 || Object.keys(s.metrics).some((k) => k.startsWith("eval/")) || s.done === tc.numTrainSteps) this.#tracker.log(s.done, s.metrics);
  }

  atEnd(): void {
    this.#tracker.finish();
  }
}

/** The caller's {@link TrainHook}s (rank 0): every `every` steps, and once more at the end (`final`). */
export class CallerHooks implements LoopHook {
  readonly #run: TrainRun;
  readonly #hooks: TrainHook[];

  constructor(run: TrainRun, hooks: TrainHook[]) {
    this.#run = run;
    this.#hooks = run.lead ? hooks : [];
  }

  async afterStep(s: StepOutcome): Promise<void> {
    const r = this.#run;
    for (const h of this.#hooks) {
      if (s.done % h.every === 0)
        await h.fn({
          step: s.done,
          totalSteps: r.config.trainer.numTrainSteps,
          loss: s.loss,
          learningRate: s.learningRate,
          metrics: s.metrics,
          model: r.model,
          optimizer: r.optimizer,
          final: false,
        });
    }
  }

  async atEnd(e: LoopEnd): Promise<void> {
    const r = this.#run;
    for (const h of this.#hooks) {
      await h.fn({
        step: e.step,
        totalSteps: r.config.trainer.numTrainSteps,
        loss: e.lastLoss ?? Number.NaN,
        learningRate: r.schedule(Math.max(0, e.step - 1)),
        metrics: e.lastMetrics,
        model: r.model,
        optimizer: r.optimizer,
        final: true,
      });
    }
  }
}

/**
 * Rank 0's checkpoints. Every rank calls {@link CheckpointHook.save} at the same step (rank 0's
 * decision came with the step's statistics, `decided`, its kind as `voted`; a final save is
 * `force`d everywhere); with ZeRO-1 rank 0 first gathers the others' moments. Every rank then
 * knows whether a permanent checkpoint of `step` exists.
 */
export class CheckpointHook implements LoopHook {
  readonly #run: TrainRun;
  readonly #stopping: () => boolean;
  /** The newest permanent checkpoint's step. */
  savedStep: number | undefined;
  /** The newest checkpoint of this run (temporary or permanent), reported to iris as `checkpoint/step`. */
  checkpointStep: number | undefined;

  constructor(run: TrainRun, stopping: () => boolean) {
    this.#run = run;
    this.#stopping = stopping;
    this.savedStep = run.savedStep;
  }

  async afterStep(s: StepOutcome): Promise<void> {
    if (s.saveVoted && s.done < this.#run.config.trainer.numTrainSteps && !this.#stopping()) await this.save(s.done, false, s.decision, s.saveVoted);
  }

  /** The end (or a stop request): a permanent checkpoint of the last step. */
  async atEnd(e: LoopEnd): Promise<void> {
    if (this.savedStep !== e.step) await this.save(e.step, true);
  }

  async save(step: number, force: boolean, decided?: SavedCheckpoint, voted?: SaveKind): Promise<SavedCheckpoint | undefined> {
    const r = this.#run;
    const tc = r.config.trainer;
    const others = r.sharded ? await r.sharded.gatherMoments(r.optimizer) : undefined;
    if (!r.lead) {
      if (force || voted === "permanent") this.savedStep = step;
      return undefined;
    }
    const saved = decided ?? r.checkpointer.decide(step, { force });
    if (!saved) return undefined;
    await r.checkpointer.commit(saved, (dir, isTemporary) =>
      saveTrainState(dir, isTemporary, {
        step,
        model: r.model,
        optimizer: others ? { state: () => r.optimizer.state(others) } : r.optimizer,
        rng: r.rng,
        tokenizer: r.tokenizer.name,
        ...(r.tokenizer instanceof HfTokenizer ? { tokenizerFiles: r.tokenizer.files } : {}),
        loader: { seed: r.loaderSeed, step, batchSize: tc.batchSize, seqLen: r.modelConfig.seqLen },
        run: r.identity,
        ...(r.tokenizerDir ? { tokenizerDir: r.tokenizerDir } : {}),
      }),
    );
    if (!saved.isTemporary) this.savedStep = step;
    this.checkpointStep = step;
    return saved;
  }
}

/** Status reports (rank 0) to `statusSink`, or inside an iris task to its `reportStatus`; rate-limited, the end forced. */
export class StatusHook implements LoopHook {
  readonly #run: TrainRun;
  readonly #reporter: StatusReporter | undefined;
  readonly #checkpoints: CheckpointHook;

  private constructor(run: TrainRun, reporter: StatusReporter | undefined, checkpoints: CheckpointHook) {
    this.#run = run;
    this.#reporter = reporter;
    this.#checkpoints = checkpoints;
  }

  static async create(run: TrainRun, sink: StatusSink | undefined, checkpoints: CheckpointHook): Promise<StatusHook> {
    const target = run.lead ? (sink ?? irisStatusSink()) : undefined;
    return new StatusHook(run, target ? new StatusReporter(target, run.config.trainer.statusIntervalSeconds * 1000) : undefined, checkpoints);
  }

  afterStep(s: StepOutcome): void {
    const total = this.#run.config.trainer.numTrainSteps;
    this.#reporter?.maybeReport(
      formatStatus({
        step: s.done,
        totalSteps: total,
        loss: s.loss,
        tokensPerSecond: s.metrics["throughput/tokens_per_second"],
        mfu: s.metrics["throughput/mfu"]!,
        secondsPerStep: s.secondsPerStep,
      }),
      { step: s.done, ...s.metrics, ...this.#checkpointMetric() },
    );
  }

  async atEnd(e: LoopEnd): Promise<void> {
    const total = this.#run.config.trainer.numTrainSteps;
    this.#reporter?.maybeReport(
      formatStatus({ step: e.step, totalSteps: total, ...(e.lastLoss !== undefined ? { loss: e.lastLoss } : {}) }) + (e.stoppedEarly ? " · stopped" : ""),
      { step: e.step, ...e.lastMetrics, ...this.#checkpointMetric() },
      true,
    );
    await this.#reporter?.flush();
  }

  #checkpointMetric(): Record<string, number> {
    const c = this.#checkpoints.checkpointStep;
    return c !== undefined ? { "checkpoint/step": c } : {};
  }
}

// Inside an iris task, status goes to the controller; outside, nowhere.
function irisStatusSink(): StatusSink | undefined {
  const ctx = getIrisCtx();
  return ctx ? (text, metrics) => ctx.reportStatus(text, metrics) : undefined;
}
