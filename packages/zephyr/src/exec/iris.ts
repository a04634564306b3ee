// The iris backend: each stage is one iris job whose tasks are the stage's shards. A task imports
// zephyr's task module, which imports the pipeline's module, rebuilds the plan, checks it against
// the run's identity and runs its shard. A shard's result is its task's return value (iris task
// results, `Job.results()`); a failure a retry cannot fix ends its task as iris `APP_ERROR` with
// the zephyr code, which this side rethrows as the same ZephyrError.
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as iris from "@marin/iris/client";
import type { Job, JobSpecInput, JobStatus } from "@marin/iris/client";
import { ownExtension } from "@marin/iris/loader";
import { ZEPHYR_ERROR_CODES, ZephyrError } from "../errors.ts";
import type { ZephyrErrorCode } from "../errors.ts";
import type { Backend, IrisBackendOptions, RemoteRun, RemoteTask, TaskResult } from "./contracts.ts";
import type { IrisTaskArgs } from "./irisTask.ts";

const TASK_MODULE = fileURLToPath(new URL(`./irisTask${ownExtension(import.meta.url)}`, import.meta.url));

/** How to submit jobs: a given client, a given address, the enclosing task's context, or the task env. */
function connect(opts: IrisBackendOptions): { submit: (spec: JobSpecInput) => Promise<Job>; close: () => void } {
  const ship = opts.bundle !== undefined ? { bundle: opts.bundle } : {};
  if (opts.client) return { submit: (s) => opts.client!.submit(s, ship), close: () => undefined };
  if (opts.address) {
    const client = iris.IrisClient.connect(opts.address, { token: opts.token ?? process.env.IRIS_AUTH_TOKEN });
    return { submit: (s) => client.submit(s, ship), close: () => client.close() };
  }
  const ctx = iris.getIrisCtx();
  // Inside an iris task: stage jobs are children of the task's job, so they die with it.
  if (ctx) return { submit: (s) => ctx.submitChild(s), close: () => undefined };
  const address = process.env.IRIS_CONTROLLER_ADDRESS;
  if (address) {
    const client = iris.IrisClient.connect(address, { token: process.env.IRIS_AUTH_TOKEN });
    return { submit: (s) => client.submit(s, ship), close: () => client.close() };
  }
  throw new ZephyrError("INVALID_ARGUMENT", "the iris backend needs a cluster: pass { iris: { client } } or { iris: { address } }, or run inside an iris task (getIrisCtx())");
}

function why(status: JobStatus): string {
  const task = status.tasks.find((t) => t.error || t.failureKind);
  const kind = task ? `${task.failureKind ?? ""}${task.errorCode ? `(${task.errorCode})` : ""}` : "";
  return [status.error, task ? `task ${task.index}: ${kind} ${task.error ?? ""}`.trim() : ""].filter(Boolean).join("; ");
}

/** The zephyr error a task ended with as iris `APP_ERROR` (a non-retryable ZephyrError it threw), if any. */
function appError(status: JobStatus): ZephyrError | undefined {
  for (const t of status.tasks) {
    if (t.failureKind !== "APP_ERROR" || !(ZEPHYR_ERROR_CODES as readonly string[]).includes(t.errorCode ?? "")) continue;
    return new ZephyrError(t.errorCode as ZephyrErrorCode, t.error ?? `task ${t.index} failed with ${t.errorCode}`);
  }
  return undefined;
}

/** Creates the iris backend for the `definePipeline` run `run`. */
export function irisBackend(run: RemoteRun, opts: IrisBackendOptions, scratch: string): Backend {
  const conn = connect(opts);
  const { origin, identity } = run;
  const runId = randomBytes(4).toString("hex");
  const rounds = new Map<number, number>();
  return {
    async runStage(stage, specs, hooks) {
      if (specs.length === 0) return [];
      // A loop stage runs once per round: each round is its own job.
      const round = rounds.get(stage.id) ?? 0;
      rounds.set(stage.id, round + 1);
      const suffix = round > 0 ? `r${round}` : "";
      // The tasks' specs go in a file (a shuffle stage's can be large); their results come back
      // through iris.
      const dir = path.join(scratch, "iris", `stage-${stage.id}${suffix}`);
      await mkdir(dir, { recursive: true });
      const tasks: RemoteTask[] = specs.map((spec) => ({ origin, identity, spec }));
      const tasksFile = path.join(dir, "tasks.json");
      await writeFile(tasksFile, JSON.stringify(tasks));
      const args: IrisTaskArgs = { tasksFile };
      const job = await conn.submit({
        name: `${opts.jobPrefix ?? "zephyr"}-${identity.slice(0, 8)}-${runId}-s${stage.id}${suffix}`,
        entrypoint: { module: TASK_MODULE, export: "runZephyrIrisTask", args },
        replicas: specs.length,
        resources: { cpuMillis: opts.cpuMillis ?? 1000, ...(opts.memoryBytes !== undefined ? { memoryBytes: opts.memoryBytes } : {}) },
        maxRetriesFailure: hooks.maxRetries,
      });
      // Progress moves as each task (shard) succeeds, not when the whole stage job ends.
      const counted = new Set<number>();
      const status = await job.wait({
        onStatus: (st) => {
          for (const t of st.tasks) {
            if (t.state === "SUCCEEDED" && !counted.has(t.index)) {
              counted.add(t.index);
              hooks.onShardDone();
            }
          }
        },
      });
      for (const t of status.tasks) for (let k = 1; k < t.attempt; k++) hooks.onRetry(new Error(`task ${t.index} attempt ${k} failed`));
      if (status.state !== "SUCCEEDED") {
        throw (
          appError(status) ??
          new ZephyrError("SHARD_FAILED", `stage ${stage.id} [${stage.name}]: iris job ${job.name} ended ${status.state}${why(status) ? `: ${why(status)}` : ""}`)
        );
      }
      const values = await job.results();
      const results: TaskResult[] = [];
      for (let i = 0; i < specs.length; i++) {
        const r = values[i] as TaskResult | undefined;
        if (r === undefined || typeof r !== "object" || r === null || !("output" in r)) {
          throw new ZephyrError("INTERNAL", `stage ${stage.id} [${stage.name}]: task ${i} of iris job ${job.name} succeeded without a shard result`);
        }
        if (!counted.has(i)) hooks.onShardDone();
        results.push(r);
      }
      return results;
    },
    close: async () => conn.close(),
  };
}
