// The worker side of the threads and iris backends: rebuild the plan from its pipeline module,
// check the fingerprint, run one shard. Errors travel back as plain data (codes survive).
import type { PipelineOrigin } from "../dataset.ts";
import { ZephyrError } from "../errors.ts";
import type { ZephyrErrorCode } from "../errors.ts";
import { originFingerprint } from "../plan/fingerprint.ts";
import { planStages } from "../plan/planner.ts";
import { rebuildPipeline } from "../pipeline.ts";
import { runTask } from "./task.ts";
import type { TaskResult, TaskSpec } from "./task.ts";

/** One shard to run away from the coordinator. */
export interface RemoteTask {
  readonly origin: PipelineOrigin;
  readonly fingerprint: string;
  readonly spec: TaskSpec;
}

/** An error as plain data. */
export interface RemoteError {
  readonly code?: ZephyrErrorCode;
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
}

/** A shard's outcome as plain data. */
export type RemoteReply = { readonly ok: true; readonly result: TaskResult } | { readonly ok: false; readonly error: RemoteError };

/** Rebuilds the plan, refuses a fingerprint mismatch, runs the shard. */
export async function runRemoteTask(task: RemoteTask): Promise<RemoteReply> {
  try {
    const ds = await rebuildPipeline(task.origin.url, task.origin.name, task.origin.args);
    const plan = planStages(ds.logical);
    const fingerprint = originFingerprint(plan.fingerprint, task.origin);
    if (fingerprint !== task.fingerprint) {
      throw new ZephyrError(
        "FINGERPRINT_MISMATCH",
        `pipeline ${task.origin.name} of ${task.origin.url} rebuilt on this worker has fingerprint ${fingerprint.slice(0, 12)}, the coordinator's is ${task.fingerprint.slice(0, 12)}: the module or its arguments differ between coordinator and worker (is the build function deterministic?); refusing to run`,
      );
    }
    return { ok: true, result: await runTask(plan, task.spec) };
  } catch (e) {
    const err = e instanceof Error ? e : new Error(String(e));
    return { ok: false, error: { code: e instanceof ZephyrError ? e.code : undefined, name: err.name, message: err.message, stack: err.stack } };
  }
}

/** Turns a remote error back into a throwable (a ZephyrError when it was one). */
export function reviveError(error: RemoteError): Error {
  if (error.code) {
    const e = new ZephyrError(error.code, error.message);
    if (error.stack) e.stack = error.stack;
    return e;
  }
  const e = new Error(error.message);
  e.name = error.name;
  if (error.stack) e.stack = error.stack;
  return e;
}
