// A fault-injection hook for tests that interrupt training at an exact step.
import { toInteger } from "@marin/iris/toolkit";
import type { TrainHook } from "./trainLm.ts";

/**
 * A fault-injection hook for tests that interrupt a training process at an exact step: when
 * `LEVANTER_PAUSE_AFTER_STEP=N` is set, after step N (before that step's checkpoint) it prints
 * `levanter: paused after step N` to stderr and waits for SIGTERM, which then stops training at
 * that boundary; a SIGKILL sent while it waits kills the run at a known point. Returns no hook
 * when the variable is unset.
 */
export function pauseAfterStepHook(env: NodeJS.ProcessEnv = process.env): TrainHook | undefined {
  const raw = env.LEVANTER_PAUSE_AFTER_STEP;
  if (raw === undefined || raw === "") return undefined;
  const at = toInteger(raw, { min: 1 });
  if (at === undefined) throw new Error(`LEVANTER_PAUSE_AFTER_STEP: expected a positive integer, got ${JSON.stringify(raw)}`);
  return {
    every: at,
    fn: async ({ step, final }) => {
      if (final || step !== at) return;
      // Signal listeners do not keep Node's event loop alive: a timer does, until SIGTERM.
      const keepAlive = setInterval(() => {}, 2 ** 30);
      const terminated = new Promise<void>((resolve) => process.once("SIGTERM", () => resolve()));
      process.stderr.write(`levanter: paused after step ${step}\n`);
      await terminated;
      clearInterval(keepAlive);
    },
  };
}
