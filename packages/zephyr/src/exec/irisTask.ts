// The entry of a zephyr shard running as an iris task (module entrypoint `runZephyrIrisTask`).
import { rename, writeFile, readFile } from "node:fs/promises";
import path from "node:path";
import { ZephyrError } from "../errors.ts";
import { runRemoteTask } from "./remoteTask.ts";
import type { RemoteReply, RemoteTask } from "./remoteTask.ts";

/** What the iris backend passes to every task of a stage job. */
export interface IrisTaskArgs {
  /** JSON array of tasks; task `IRIS_TASK_INDEX` runs element `IRIS_TASK_INDEX`. */
  tasksFile: string;
  /** Where `result-<index>.json` goes. */
  resultDir: string;
}

// Failures that would fail again on a retry: reported through the result file (the task exits 0)
// so iris does not retry them and the coordinator rethrows them as they are.
const DETERMINISTIC = new Set(["USER_FUNCTION", "BAD_RECORD", "INVALID_ARGUMENT", "FINGERPRINT_MISMATCH", "MISSING_DEPENDENCY"]);

/** Runs shard `IRIS_TASK_INDEX` of a stage job and writes its result file. */
export async function runZephyrIrisTask(args: IrisTaskArgs): Promise<void> {
  const index = Number(process.env.IRIS_TASK_INDEX);
  const attempt = Number(process.env.IRIS_ATTEMPT ?? "1");
  if (!Number.isInteger(index) || index < 0) throw new ZephyrError("INTERNAL", "runZephyrIrisTask: IRIS_TASK_INDEX is not set (not inside an iris task?)");
  const tasks = JSON.parse(await readFile(args.tasksFile, "utf8")) as RemoteTask[];
  const task = tasks[index];
  if (!task) throw new ZephyrError("INTERNAL", `runZephyrIrisTask: no task ${index} in ${args.tasksFile}`);
  const reply: RemoteReply = await runRemoteTask({ ...task, spec: { ...task.spec, attempt: Math.max(0, attempt - 1) } });
  if (!reply.ok && !(reply.error.code && DETERMINISTIC.has(reply.error.code))) {
    const e = new Error(reply.error.message);
    e.stack = reply.error.stack;
    throw e;
  }
  const file = path.join(args.resultDir, `result-${index}.json`);
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, JSON.stringify(reply));
  await rename(tmp, file);
}
