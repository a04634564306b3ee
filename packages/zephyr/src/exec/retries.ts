// Per-shard retries, shared by the in-process backends: which failures a retry may fix (a
// ZephyrError's own `retryable`), and the loop that runs an attempt until it succeeds or may not.
import { ZephyrError } from "../errors.ts";
import type { Stage } from "../plan/planner.ts";
import type { StageHooks, TaskResult, TaskSpec } from "./contracts.ts";

/** Whether a shard's failure `e` may succeed on a retry (anything but a non-retryable ZephyrError). */
export function isRetryable(e: unknown): boolean {
  return !(e instanceof ZephyrError && !e.retryable);
}

/** Runs `attempt` until it succeeds, the error is not retryable, or retries are spent. */
export async function withRetries(spec: TaskSpec, stage: Stage, hooks: StageHooks, attempt: (spec: TaskSpec) => Promise<TaskResult>): Promise<TaskResult> {
  for (let k = 0; ; k++) {
    try {
      const r = await attempt({ ...spec, attempt: k });
      hooks.onShardDone();
      return r;
    } catch (e) {
      if (!hooks.isRetryable(e) || k >= hooks.maxRetries) {
        if (e instanceof ZephyrError) throw e;
        const msg = e instanceof Error ? e.message : String(e);
        throw new ZephyrError("SHARD_FAILED", `stage ${stage.id} [${stage.name}], shard ${spec.shard} of ${spec.numShards} failed after ${k + 1} attempt(s): ${msg}`, { cause: e });
      }
      hooks.onRetry(e);
    }
  }
}
