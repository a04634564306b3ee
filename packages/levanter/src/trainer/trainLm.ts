// trainLm: a training run set up once (trainRun.ts), then a loop of steps (trainStep.ts) whose
// evaluation, trackers, caller's hooks, status and checkpoints are hooks (loopHooks.ts).
import path from "node:path";
import type { Distributed } from "../parallel/distributed.ts";
import { log } from "../internal/log.ts";
import { CallerHooks, CheckpointHook, EvaluationHook, StatusHook, TrackerHook, type LoopHook } from "./loopHooks.ts";
import type { TrainHook, TrainLmResult } from "./trainTypes.ts";
import type { StatusSink } from "./status.ts";
import { parseTrainLmConfig, type TrainLmConfig, type TrainLmConfigInput } from "./trainerConfig.ts";
import { RunResources, setupRun } from "./trainRun.ts";
import { Stepper } from "./trainStep.ts";

export type { TrainHook, TrainLmResult, TrainStepInfo } from "./trainTypes.ts";

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
  const tc = config.trainer;
  const res = new RunResources(options.signal, options.distributed === undefined);
  try {
    const run = await setupRun(config, options, res);
    const { model, world } = run;
    // A gang stops together: a stop request on any rank is voted with the step's statistics.
    let stopVoted = false;
    const stopping = () => (world === 1 ? run.abort.aborted : stopVoted);
    const evaluation = new EvaluationHook(run);
    const trackers = new TrackerHook(run);
    const callers = new CallerHooks(run, options.hooks ?? []);
    const checkpoints = new CheckpointHook(run, stopping);
    const status = await StatusHook.create(run, options.statusSink, checkpoints);
    const afterStep: LoopHook[] = [evaluation, trackers, callers, status, checkpoints];
    const atEnd: LoopHook[] = [checkpoints, callers, status, trackers];
    log("info", "training", {
      parameters: model.parameterCount(),
      startStep: run.startStep,
      totalSteps: tc.numTrainSteps,
      backend: run.backend.name,
      world,
      microBatches: run.microBatches,
    });

    const stepper = new Stepper(run);
    let lastLoss: number | undefined;
    let lastMetrics: Record<string, number> = {};
    let step = run.startStep;
    for (; step < tc.numTrainSteps && !stopping(); step++) {
      const s = await stepper.step(step);
      stopVoted = s.stopVoted;
      if (!s.skipped) lastLoss = s.loss;
      lastMetrics = s.metrics;
      for (const h of afterStep) await h.afterStep?.(s);
    }

    const end = { step, stoppedEarly: step < tc.numTrainSteps, lastLoss, lastMetrics };
    for (const h of atEnd) await h.atEnd?.(end);
    log("info", end.stoppedEarly ? "stopped early" : "finished", { step, loss: lastLoss, evalLoss: evaluation.lastEval?.loss, skippedSteps: stepper.skippedSteps });
    // A gang ends together: every rank waits here until all have said goodbye, so none exits
    // (and closes its links) while another is still saving, evaluating or in the last collective.
    if (res.ownDist) await run.dist.close({ waitForPeers: true });
    return {
      step,
      ...(run.resumedFrom !== undefined ? { resumedFrom: run.resumedFrom } : {}),
      stoppedEarly: end.stoppedEarly,
      skippedSteps: stepper.skippedSteps,
      ...(lastLoss !== undefined ? { finalLoss: lastLoss } : {}),
      ...(evaluation.lastEval ? { eval: evaluation.lastEval } : {}),
      ...(evaluation.lastSourceEvals ? { evalBySource: evaluation.lastSourceEvals } : {}),
      parameterCount: model.parameterCount(),
      checkpoint: path.join(run.checkpointer.basePath, `step-${step}`),
      backend: run.backend,
      rank: run.rank,
      world,
    };
  } finally {
    await res.release();
  }
}
