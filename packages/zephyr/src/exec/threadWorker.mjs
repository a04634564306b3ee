// Entry of a zephyr worker thread. Plain JavaScript so that it loads without a TypeScript loader:
// it registers tsx (unless the thread already has it), then imports the TypeScript worker code.
import { register } from "tsx/esm/api";

const hasTsx = await import("./tsProbe.ts").then(
  () => true,
  () => false,
);
if (!hasTsx) register();

const { runRemoteTask } = await import("./remoteTask.ts");

/** Runs one shard (see remoteTask.ts). */
export default runRemoteTask;
