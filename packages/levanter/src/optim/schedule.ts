// Learning-rate schedules: warmup, constant/linear/cosine decay, rewarmup cycles, as one function of the step.
import type { OptimizerConfig } from "./optimizerConfig.ts";

/** A learning rate per step (0-based). */
export type LrSchedule = (step: number) => number;

type Piece = { start: number; fn: (count: number) => number };

function fracOrSteps(v: number, cycleSteps: number): number {
  return v < 1 ? Math.floor(v * cycleSteps) : v;
}

// optax-style pieces: `count` is the step relative to the start of the piece.
function linear(from: number, to: number, steps: number): (count: number) => number {
  if (steps <= 0) return () => from;
  return (c) => from + (Math.min(Math.max(c, 0), steps) / steps) * (to - from);
}

function cycleEnds(cfg: Pick<OptimizerConfig, "cycles" | "cycleLength">, total: number): number[] {
  const ends: number[] = [];
  if (cfg.cycleLength !== undefined) {
    const lengths = typeof cfg.cycleLength === "number" ? [] : cfg.cycleLength;
    if (typeof cfg.cycleLength === "number") {
      for (let e = cfg.cycleLength; e < total; e += cfg.cycleLength) ends.push(e);
    } else {
      let e = 0;
      for (const l of lengths) if ((e += l) < total) ends.push(e);
    }
  } else if (typeof cfg.cycles === "number") {
    const len = Math.floor(total / cfg.cycles);
    for (let k = 1; k < cfg.cycles; k++) ends.push(k * len);
  } else if (cfg.cycles !== undefined) {
    for (const e of cfg.cycles) if (e < total) ends.push(e);
  }
  ends.push(total);
  return ends;
}

/**
 * The learning-rate schedule of `cfg` over `totalSteps` steps. Each cycle runs a linear warmup from
 * where the previous cycle ended (0 for the first; `rewarmup` for later ones), a stable phase at
 * the peak, then the decay (`constant`, `linear`/`wsd` or `cosine` to `minLrRatio · lr`, or `inv_sqrt`
 * with a 10,000-step timescale, floored there). A warmup longer than the cycle is cut to the cycle,
 * so the rate never jumps. Semantics follow upstream Levanter's `lr_scheduler`.
 */
export function lrSchedule(
  cfg: Pick<OptimizerConfig, "learningRate" | "lrSchedule" | "minLrRatio" | "warmup" | "decay" | "rewarmup" | "cycles" | "cycleLength">,
  totalSteps: number,
): LrSchedule {
  const lr = cfg.learningRate;
  const minLr = lr * cfg.minLrRatio;
  const pieces: Piece[] = [];
  let start = 0;
  let previousEnd = 0;
  for (const [cycle, end] of cycleEnds(cfg, totalSteps).entries()) {
    const cycleSteps = end - start;
    const warmup = Math.min(fracOrSteps(cycle === 0 ? cfg.warmup : cfg.rewarmup, cycleSteps), cycleSteps);
    if (warmup > 0) pieces.push({ start, fn: linear(previousEnd, lr, warmup) });
    const decay0 = cfg.decay ?? (cfg.lrSchedule === "wsd" ? 0.2 : undefined);
    const decaySteps = Math.min(decay0 === undefined ? cycleSteps - warmup : fracOrSteps(decay0, cycleSteps), cycleSteps - warmup);
    const stable = cycleSteps - warmup - decaySteps;
    if (stable > 0) pieces.push({ start: start + warmup, fn: () => lr });
    let decay: (count: number) => number;
    switch (cfg.lrSchedule) {
      case "constant":
        decay = () => lr;
        break;
      case "linear":
      case "wsd":
        decay = linear(lr, minLr, decaySteps);
        break;
      case "cosine":
        decay =
          decaySteps <= 0
            ? () => lr
            : (c) => {
                const cos = 0.5 * (1 + Math.cos((Math.PI * Math.min(Math.max(c, 0), decaySteps)) / decaySteps));
                return lr * ((1 - cfg.minLrRatio) * cos + cfg.minLrRatio);
              };
        break;
      case "inv_sqrt": {
        const w = warmup;
        decay = (c) => Math.max(lr * Math.min(1, 1 / Math.sqrt(Math.max(c + w, 1) / 10_000)), minLr);
        break;
      }
    }
    pieces.push({ start: start + warmup + stable, fn: decay });
    previousEnd = decay(decaySteps);
    start = end;
  }
  return (step) => {
    let i = 0;
    while (i + 1 < pieces.length && step >= pieces[i + 1]!.start) i++;
    const piece = pieces[i]!;
    return piece.fn(step - piece.start);
  };
}
