// Entry of a zephyr worker thread. Plain JavaScript so that it loads without a TypeScript loader.
// Built (dist/exec/), the worker code beside it is JavaScript and loads as it is (a pipeline module
// written in TypeScript gets tsx on first need: see plan/registry.ts). From source (src/exec/), it
// registers iris's source loader (unless the thread can already load TypeScript), then imports
// the TypeScript worker code.
import { existsSync } from "node:fs";

const fromSource = existsSync(new URL("./remoteTask.ts", import.meta.url));
if (fromSource) {
  const loadsTypeScript = await import("./tsProbe.ts").then(
    () => true,
    () => false,
  );
  if (!loadsTypeScript) await import("@marin/iris/source-loader");
}

const { runRemoteTask } = await import(fromSource ? "./remoteTask.ts" : "./remoteTask.js");

/** Runs one shard (see remoteTask.ts). */
export default runRemoteTask;
