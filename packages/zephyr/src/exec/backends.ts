// Execution backends: picks the one a run asked for. Each runs the shards of one stage and hands
// back their results in shard order; the coordinator owns retries' policy, outputs and counters.
// The threads and iris backends load only when chosen.
import { ZephyrError } from "../errors.ts";
import type { DatasetPlan } from "../plan/planner.ts";
import type { Backend, IrisBackendOptions, RemoteRun, TaskResult, ZephyrBackendName } from "./contracts.ts";
import { withRetries } from "./retries.ts";
import { runTask } from "./task.ts";

/** Runs every shard in this thread, one after another. */
export function inlineBackend(plan: DatasetPlan): Backend {
  return {
    async runStage(stage, specs, hooks) {
      const out: TaskResult[] = [];
      for (const spec of specs) out.push(await withRetries(spec, stage, hooks, (s) => runTask(plan, s)));
      return out;
    },
    close: async () => undefined,
  };
}

/**
 * Creates the backend `name` for running `plan`. `remote` (a `definePipeline` run: its origin and
 * the identity the coordinator computed) is required by the threads and iris backends.
 */
export async function chooseBackend(
  name: ZephyrBackendName,
  plan: DatasetPlan,
  remote: RemoteRun | undefined,
  opts: { threads?: number; iris?: IrisBackendOptions; scratch: string },
): Promise<Backend> {
  if (name === "inline") return inlineBackend(plan);
  if (!remote) throw new ZephyrError("INTERNAL", `backend ${name} needs a definePipeline run`);
  if (name === "threads") {
    const { threadsBackend } = await import("./threads.ts");
    return threadsBackend(remote, opts.threads);
  }
  const { irisBackend } = await import("./iris.ts");
  return irisBackend(remote, opts.iris ?? {}, opts.scratch);
}
