// The types trainLm's callers and hooks share (kept apart so the progress display, the trackers
// and the loop import them without importing each other).
import type { BackendSelection } from "../backend.ts";
import type { TransformerLm } from "../models/transformer.ts";
import type { AdamW } from "../optim/adamw.ts";
import type { EvalResult } from "./evaluate.ts";

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

/** The outcome of `trainLm`. */
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
