import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { z } from "zod";

/** A module entrypoint: `module` is a `file:` URL or an absolute path on the worker. */
const moduleEntrypoint = z.object({
  module: z.string().min(1),
  export: z.string().min(1),
  args: z.unknown().optional(),
});

/** A command entrypoint: any program with its arguments. */
const commandEntrypoint = z.object({
  command: z.array(z.string()).min(1),
  cwd: z.string().optional(),
});

/** What the worker hands the task runner, as a JSON file in the attempt's scratch directory. */
export const runnerSpecSchema = z.object({
  entrypoint: z.union([moduleEntrypoint, commandEntrypoint]),
  /** The worker's pid: when the runner's parent is no longer this process, the worker is gone. */
  parentPid: z.number().int().positive(),
  /** Grace between SIGTERM and SIGKILL of the attempt's group once the worker is gone. */
  orphanGraceMs: z.number().int().nonnegative().default(2000),
  /** How often the runner checks that its worker is still its parent. */
  parentPollMs: z.number().int().positive().default(500),
});

/** The task runner's input (see {@link runnerSpecSchema}). */
export type RunnerSpec = z.input<typeof runnerSpecSchema>;

/** The runner of module entrypoints (TypeScript, under tsx). */
export const TASK_RUNNER_PATH = fileURLToPath(new URL("./taskRunner.ts", import.meta.url));
/** The supervisor of command entrypoints (plain JavaScript: no loader to start). */
export const COMMAND_SUPERVISOR_PATH = fileURLToPath(new URL("./commandSupervisor.mjs", import.meta.url));

/**
 * The argv that runs an attempt whose spec is in `specPath`: this Node binary with, for a module
 * entrypoint, the tsx that `@marin/iris` depends on (resolved from this package, never from the
 * task's cwd) and the task runner; for a command, the command supervisor.
 */
export function runnerArgv(entrypoint: RunnerSpec["entrypoint"], specPath: string): string[] {
  if ("command" in entrypoint) return [process.execPath, COMMAND_SUPERVISOR_PATH, specPath];
  const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  return [process.execPath, "--import", tsxLoader, TASK_RUNNER_PATH, specPath];
}

/** A `file:` URL for a module entrypoint given as a URL or an absolute path. */
export function moduleUrl(module: string): string {
  if (module.startsWith("file:")) return module;
  if (!module.startsWith("/")) {
    throw new Error(`entrypoint.module: expected a file: URL or an absolute path, got ${JSON.stringify(module)}`);
  }
  return pathToFileURL(module).href;
}
