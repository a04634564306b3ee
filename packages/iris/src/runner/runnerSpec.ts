// The runner spec a worker writes for each attempt (entrypoint, parent pid, grace, report path),
// its check, and the argv that starts the runner.
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Entrypoint } from "../jobSpec.ts";
import { ownExtension } from "../moduleLoader.ts";
import { sourceNode } from "../process/sourceLoader.ts";

/** What the worker hands an attempt's runner, as a JSON file in the attempt's scratch directory. */
export interface RunnerSpec {
  /**
   * The entrypoint exactly as the client sent it (validated once, by the controller): a module
   * (`file:` URL or absolute path) and export with JSON args, or a command.
   */
  entrypoint: Entrypoint;
  /**
   * The worker's pid: when the runner's parent is no longer this process, the worker is gone.
   * 0: no watch (the attempt runs under an attempt keeper, which outlives a worker restart).
   */
  parentPid: number;
  /** Grace between SIGTERM and SIGKILL of the attempt's group once the worker is gone. Default 2 s. */
  orphanGraceMs?: number;
  /** How often the runner checks that its worker is still its parent. Default 500 ms. */
  parentPollMs?: number;
  /**
   * Where a module entrypoint's runner writes its RunnerReport (taskResult.ts: return value or
   * non-retryable error) before it exits. Default "": nowhere (the value is dropped).
   */
  resultPath?: string;
}

/**
 * Checks a runner spec read back from disk: the runner's own fields, and which kind of
 * {@link Entrypoint} it carries (the entrypoint itself was validated by the controller, with the
 * job spec's zod schema; it is not validated again). Hand-written rather than zod: it runs at the
 * start of every attempt, where each module loaded is startup latency. Returns the problems, or
 * the spec with defaults applied.
 */
export function parseRunnerSpec(raw: unknown): Required<RunnerSpec> | { problems: string[] } {
  const problems: string[] = [];
  const spec = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  const entry = (typeof spec.entrypoint === "object" && spec.entrypoint !== null ? spec.entrypoint : {}) as Record<string, unknown>;
  let entrypoint: Entrypoint | undefined;
  if (Array.isArray(entry.command) && entry.command.length > 0) {
    entrypoint = entry as Entrypoint;
  } else if (typeof entry.module === "string" && entry.module !== "" && typeof entry.export === "string" && entry.export !== "") {
    entrypoint = entry as Entrypoint;
  } else {
    problems.push("entrypoint: expected { command } or { module, export } with non-empty strings");
  }
  const int = (key: string, fallback: number | undefined, min: number): number => {
    const v = spec[key] ?? fallback;
    if (typeof v !== "number" || !Number.isInteger(v) || v < min) {
      problems.push(`${key}: expected an integer ≥ ${min}, got ${JSON.stringify(v)}`);
      return 0;
    }
    return v;
  };
  // 0: not watched (an adoptable attempt: its keeper ends it when no worker is left).
  const parentPid = int("parentPid", undefined, 0);
  const orphanGraceMs = int("orphanGraceMs", 2000, 0);
  const parentPollMs = int("parentPollMs", 500, 1);
  const resultPath = spec.resultPath ?? "";
  if (typeof resultPath !== "string") problems.push(`resultPath: expected a string, got ${JSON.stringify(resultPath)}`);
  if (problems.length > 0 || entrypoint === undefined || typeof resultPath !== "string") return { problems };
  return { entrypoint, parentPid, orphanGraceMs, parentPollMs, resultPath };
}

/** Whether iris runs from its TypeScript source (the workspace) rather than built JavaScript. */
const FROM_SOURCE = ownExtension(import.meta.url) === ".ts";
/** The runner of module entrypoints: TypeScript under the source loader from source, plain JavaScript built. */
export const TASK_RUNNER_PATH = fileURLToPath(new URL(`./taskRunner${ownExtension(import.meta.url)}`, import.meta.url));
/** The supervisor of command entrypoints (plain JavaScript: no loader to start). */
export const COMMAND_SUPERVISOR_PATH = fileURLToPath(new URL("./commandSupervisor.mjs", import.meta.url));

/**
 * The argv that runs an attempt whose spec is in `specPath`: for a command, this Node binary with
 * the command supervisor; for a module entrypoint, the task runner — built, as plain JavaScript
 * (a TypeScript module gets tsx on first need, see moduleLoader.ts); from source, under iris's
 * source loader (process/sourceLoader.ts: a `file:` URL of this package, never resolved from the
 * task's cwd).
 */
export function runnerArgv(entrypoint: RunnerSpec["entrypoint"], specPath: string): string[] {
  if ("command" in entrypoint) return [process.execPath, COMMAND_SUPERVISOR_PATH, specPath];
  if (!FROM_SOURCE) return [process.execPath, TASK_RUNNER_PATH, specPath];
  return [...sourceNode(), TASK_RUNNER_PATH, specPath];
}

/** A `file:` URL for a module entrypoint given as a URL or an absolute path. */
export function moduleUrl(module: string): string {
  if (module.startsWith("file:")) return module;
  if (!module.startsWith("/")) {
    throw new Error(`entrypoint.module: expected a file: URL or an absolute path, got ${JSON.stringify(module)}`);
  }
  return pathToFileURL(module).href;
}
