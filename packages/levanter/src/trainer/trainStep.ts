// One training step of a run (trainRun.ts): the batch, the data-parallel gradients (with rank 0's
// checkpoint decision and a stop request voted alongside), the non-finite guard, the update, and
// the step's metrics. The loop and its hooks are trainLm's (trainLm.ts, loopHooks.ts).
import { tf } from "../tf.ts";
import type { SavedCheckpoint } from "../checkpoint/checkpointer.ts";
import { LevanterError } from "../errors.ts";
import { log } from "../internal/log.ts";
import { dataParallelGradients, type SaveKind } from "./gradients.ts";
import type { TrainRun } from "./trainRun.ts";

/** What one step did. */
export interface StepOutcome {
  /** Steps completed (the step index that just finished, plus one). */
  done: number;
  loss: number;
  gradNorm: number;
  learningRate: number;
  /** True when the loss or gradient norm was not finite and the update was skipped. */
  skipped: boolean;
  /** The step's metrics; hooks may add to them (evaluation) before later hooks read them. */
  metrics: Record<string, number>;
  /** Rank 0's checkpoint decision taken before the step (rank 0 only). */
  decision: SavedCheckpoint | undefined;
  /** The checkpoint kind the gang agreed on for after this step, if any. */
  saveVoted: SaveKind | undefined;
  /** Whether a rank asked the gang to stop (voted with the step's statistics). */
  stopVoted: boolean;
  /** Seconds the step took; `secondsPerStep` is the run's moving average including it. */
  seconds: number;
  secondsPerStep: number;
}

/** Runs steps of one run; keeps the moving step time and the count of skipped steps. */
export class Stepper {
  readonly #run: TrainRun;
  #secondsPerStep: number | undefined;
  skippedSteps = 0;

  constructor(run: TrainRun) {
    this.#run = run;
  }

  /** Trains step `step` (0-based). */
  async step(step: number): Promise<StepOutcome> {
    const r = this.#run;
    const tc = r.config.trainer;
    const t0 = performance.now();
    const batch = r.loader.batch(step);
    const lr = r.schedule(step);
    // Rank 0 decides now whether a checkpoint follows this step (the interval clock read before
    // the step, not after); on a gang its vote travels with the step's statistics.
    const decision = r.lead && step + 1 < tc.numTrainSteps ? r.checkpointer.decide(step + 1) : undefined;
    const { loss, grads, stop, save, timing } = await dataParallelGradients(r.model, batch.inputs, batch.targets, batch.size, r.microBatches, r.dist.gang, {
      stopRequested: r.abort.aborted,
      ...(decision ? { saveRequested: decision.isTemporary ? "temporary" : "permanent" } : {}),
      ...(r.sharded ? { zero: r.sharded.plan } : {}),
    });
    let gradNorm: number;
    try {
      gradNorm = r.sharded ? await r.sharded.globalNorm(r.optimizer, grads) : r.optimizer.globalNorm(grads);
      // Checked before anything is applied: a non-finite update would poison the parameters and
      // Adam's moments for good.
      if (!Number.isFinite(loss) || !Number.isFinite(gradNorm)) {
        const what = `train/loss is ${loss} and optim/grad_norm is ${gradNorm} at step ${step}`;
        if (tc.crashOnNonFinite) throw new LevanterError("NON_FINITE_LOSS", `${what}; the update was not applied`);
        this.skippedSteps++;
        log("warn", "non-finite step skipped", { step, loss, gradNorm, skippedSteps: this.skippedSteps });
      } else {
        r.optimizer.apply(grads, lr, gradNorm);
        await r.sharded?.gatherParams();
      }
    } finally {
      tf.dispose([...grads.values()]);
    }
    const skipped = !Number.isFinite(loss) || !Number.isFinite(gradNorm);
    const seconds = (performance.now() - t0) / 1000;
    this.#secondsPerStep = this.#secondsPerStep === undefined ? seconds : 0.9 * this.#secondsPerStep + 0.1 * seconds;
    const tps = r.tokensPerStep / seconds;
    const metrics: Record<string, number> = {
      "train/loss": loss,
      "optim/learning_rate": lr,
      "optim/grad_norm": gradNorm,
      "throughput/tokens_per_second": tps,
      "throughput/mfu": ((r.flopsPerToken * tps) / tc.peakFlops) * 100,
      "throughput/duration": seconds,
      "train/skipped_steps": this.skippedSteps,
      // Where rank 0's step went across the gang: its forward/backward, waiting for the slowest
      // rank (the statistics exchange), the all-reduce.
      ...(r.world > 1 ? { "parallel/compute_seconds": timing.compute / 1000, "parallel/wait_seconds": timing.stats / 1000, "parallel/reduce_seconds": timing.reduce / 1000 } : {}),
    };
    return { done: step + 1, loss, gradNorm, learningRate: lr, skipped, metrics, decision, saveVoted: save, stopVoted: stop, seconds, secondsPerStep: this.#secondsPerStep };
  }
}
