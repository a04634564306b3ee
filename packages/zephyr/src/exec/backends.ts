// Execution backends. Each runs the shards of one stage and hands back their results in shard
// order; the coordinator owns retries' policy, outputs and counters.
import type { IrisClient } from "@marin/iris";
import type { Dataset } from "../dataset.ts";
import { ZephyrError } from "../errors.ts";
import type { Plan, Stage } from "../plan/planner.ts";
import { runTask } from "./task.ts";
import type { TaskResult, TaskSpec } from "./task.ts";

/** The backends a sink can run on. */
export type BackendName = "inline" | "threads" | "iris";

/** Settings of the iris backend. */
export interface IrisBackendOptions {
  /** A connected client (for example `LocalCluster.client`). */
  client?: IrisClient;
  /** Address of the controller (default: the client of the enclosing iris task, via getIrisCtx()). */
  address?: string;
  /** Bearer token for `address`. */
  token?: string;
  /** CPU millicores per shard task (default 1000). */
  cpuMillis?: number;
  /** Memory per shard task in bytes. */
  memoryBytes?: number;
  /** Prefix of the job names (default `zephyr`). */
  jobPrefix?: string;
}

/** How the coordinator wants failures handled. */
export interface StageHooks {
  readonly maxRetries: number;
  isRetryable(e: unknown): boolean;
  onRetry(e: unknown): void;
  onShardDone(): void;
}

/** Runs the shards of a stage. */
export interface Backend {
  runStage(stage: Stage, specs: readonly TaskSpec[], hooks: StageHooks): Promise<TaskResult[]>;
  close(): Promise<void>;
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

/** Runs every shard in this thread, one after another. */
export function inlineBackend(plan: Plan): Backend {
  return {
    async runStage(stage, specs, hooks) {
      const out: TaskResult[] = [];
      for (const spec of specs) out.push(await withRetries(spec, stage, hooks, (s) => runTask(plan, s)));
      return out;
    },
    close: async () => undefined,
  };
}

/** Creates the backend `name` for running `plan` (built from `ds`). */
export async function chooseBackend(name: BackendName, ds: Dataset<unknown>, plan: Plan, opts: { threads?: number; iris?: IrisBackendOptions; scratch: string }): Promise<Backend> {
  switch (name) {
    case "inline":
      return inlineBackend(plan);
    case "threads": {
      const { threadsBackend } = await import("./threads.ts");
      return threadsBackend(ds.origin!, plan, opts.threads);
    }
    case "iris": {
      const { irisBackend } = await import("./iris.ts");
      return irisBackend(ds.origin!, plan, opts.iris ?? {}, opts.scratch);
    }
  }
}
