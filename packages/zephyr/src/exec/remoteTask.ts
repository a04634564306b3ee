// The worker side of the threads and iris backends: rebuild the plan from its pipeline module,
// check it against the run's identity (computed once, by the coordinator), run one shard. Errors
// travel back as plain data (codes survive).
import { checkRunIdentity } from "../plan/fingerprint.ts";
import { planStages } from "../plan/planner.ts";
import { rebuildPipeline } from "../plan/registry.ts";
import type { RemoteReply, RemoteTask } from "./contracts.ts";
import { toRemoteError } from "./remoteError.ts";
import { runTask } from "./task.ts";

/** Rebuilds the plan, refuses one whose identity is not the run's, runs the shard. */
export async function runRemoteTask(task: RemoteTask): Promise<RemoteReply> {
  try {
    const plan = planStages(await rebuildPipeline(task.origin.url, task.origin.name, task.origin.args));
    checkRunIdentity(plan, task.origin, task.identity);
    return { ok: true, result: await runTask(plan, task.spec) };
  } catch (e) {
    return { ok: false, error: toRemoteError(e) };
  }
}
