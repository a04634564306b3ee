// The entry of a zephyr shard running as an iris task (module entrypoint `runZephyrIrisTask`).
import { rename, writeFile, readFile } from "node:fs/promises";
import path from "node:path";
import { ZephyrError } from "../errors.ts";
import type { RemoteReply, RemoteTask } from "./contracts.ts";
import { reviveError } from "./remoteError.ts";
import { runRemoteTask } from "./remoteTask.ts";

/** What the iris backend passes to every task of a stage job. */
export interface IrisTaskArgs {
  /** JSON array of tasks; task `IRIS_TASK_INDEX` runs element `IRIS_TASK_INDEX`. */
  tasksFile: string;
  /** Where `result-<index>.json` goes. */
  resultDir: string;
}

/** Runs shard `IRIS_TASK_INDEX` of a stage job and writes its result file. */
export async function runZephyrIrisTask(args: IrisTaskArgs): Promise<void> {
  const index = Number(process.env.IRIS_TASK_INDEX);
  const attempt = Number(process.env.IRIS_ATTEMPT ?? "1");
  if (!Number.isInteger(index) || index < 0) throw new ZephyrError("INTERNAL", "runZephyrIrisTask: IRIS_TASK_INDEX is not set (not inside an iris task?)");
  const tasks = JSON.parse(await readFile(args.tasksFile, "utf8")) as RemoteTask[];
  const task = tasks[index];
  if (!task) throw new ZephyrError("INTERNAL", `runZephyrIrisTask: no task ${index} in ${args.tasksFile}`);
  const reply: RemoteReply = await runRemoteTask({ ...task, spec: { ...task.spec, attempt: Math.max(0, attempt - 1) } });
  if (!reply.ok) {
    // A failure a retry could fix is thrown (iris retries it); one that would fail again goes
    // through the result file (the task exits 0) so that the coordinator rethrows it as it is.
    const e = reviveError(reply.error);
    if (!(e instanceof ZephyrError && !e.retryable)) throw e;
  }
  const file = path.join(args.resultDir, `result-${index}.json`);
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, JSON.stringify(reply));
  await rename(tmp, file);
}
