// The entry of a zephyr shard running as an iris task (module entrypoint `runZephyrIrisTask`): its
// return value is the shard's result (iris records it; the backend reads `Job.results()`).
import { readFile } from "node:fs/promises";
import { ZephyrError } from "../errors.ts";
import type { RemoteTask, TaskResult } from "./contracts.ts";
import { reviveError } from "./remoteError.ts";
import { runRemoteTask } from "./remoteTask.ts";

/** What the iris backend passes to every task of a stage job. */
export interface IrisTaskArgs {
  /** JSON array of tasks; task `IRIS_TASK_INDEX` runs element `IRIS_TASK_INDEX`. */
  tasksFile: string;
}

/**
 * Runs shard `IRIS_TASK_INDEX` of a stage job and returns its result. A failure is thrown: as a
 * ZephyrError when it was one, whose `retryable: false` (USER_FUNCTION, BAD_RECORD, …) makes iris
 * end the task as `APP_ERROR` without retry, keeping the code and message.
 */
export async function runZephyrIrisTask(args: IrisTaskArgs): Promise<TaskResult> {
  const index = Number(process.env.IRIS_TASK_INDEX);
  const attempt = Number(process.env.IRIS_ATTEMPT ?? "1");
  if (!Number.isInteger(index) || index < 0) throw new ZephyrError("INTERNAL", "runZephyrIrisTask: IRIS_TASK_INDEX is not set (not inside an iris task?)");
  const tasks = JSON.parse(await readFile(args.tasksFile, "utf8")) as RemoteTask[];
  const task = tasks[index];
  if (!task) throw new ZephyrError("INTERNAL", `runZephyrIrisTask: no task ${index} in ${args.tasksFile}`);
  const reply = await runRemoteTask({ ...task, spec: { ...task.spec, attempt: Math.max(0, attempt - 1) } });
  if (!reply.ok) throw reviveError(reply.error);
  return reply.result;
}
