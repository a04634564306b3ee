import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { MarinError } from "../errors.ts";
import { isStep } from "../step/step.ts";
import type { Step } from "../step/step.ts";

/** What an experiment script default-exports: builds and returns its steps (dependencies are found through the configs). */
export type ExperimentBuild = () => readonly Step<any>[] | Promise<readonly Step<any>[]>;

/** The pnpm workspace root this package lives in (the folder holding `pnpm-workspace.yaml`), if any. */
function findWorkspaceRoot(): string | undefined {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, "pnpm-workspace.yaml"))) return dir;
    const up = path.dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

const workspaceRoot = findWorkspaceRoot();

/**
 * The folder relative command-line paths resolve against: where the user ran the command. `pnpm`
 * runs the workspace root's scripts (`pnpm marin …`) from the root and records the caller's folder
 * in INIT_CWD; only then is INIT_CWD used. Any other npm-script context (a script of some package
 * that runs marin from its own folder, say) keeps the process's cwd.
 */
export function invocationDir(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd(), root: string | undefined = workspaceRoot): string {
  const atRoot = root !== undefined && path.resolve(cwd) === path.resolve(root);
  if (env.npm_lifecycle_event && env.INIT_CWD && atRoot) return env.INIT_CWD;
  return cwd;
}

/** Resolves a command-line path against {@link invocationDir}. */
export function resolveCliPath(p: string): string {
  return path.resolve(invocationDir(), p);
}

// Builds registered by a script that runs itself (see runIfMain): importing the script again from
// inside its own top-level await would wait on itself forever.
const preloaded = new Map<string, ExperimentBuild>();

/** Imports an experiment script and calls its default export; returns the absolute script path and the steps. */
export async function loadExperiment(script: string): Promise<{ script: string; steps: Step<any>[] }> {
  const abs = path.resolve(script);
  let mod: { default?: unknown };
  const known = preloaded.get(abs);
  if (known) mod = { default: known };
  else {
    try {
      mod = (await import(pathToFileURL(abs).href)) as { default?: unknown };
    } catch (e) {
      throw new MarinError("NOT_FOUND", `could not import experiment script ${abs}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
  }
  if (typeof mod.default !== "function") {
    throw new MarinError("INVALID_GRAPH", `${abs}: an experiment script must \`export default\` a function that returns its steps`);
  }
  const steps = await (mod.default as ExperimentBuild)();
  if (!Array.isArray(steps) || !steps.every(isStep)) {
    throw new MarinError("INVALID_GRAPH", `${abs}: the default export must return an array of steps made by defineStep`);
  }
  return { script: abs, steps: steps as Step<any>[] };
}

/** Whether the module at `importMetaUrl` is the program node was started with. */
export function isMainModule(importMetaUrl: string): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(fileURLToPath(importMetaUrl)) === realpathSync(path.resolve(entry));
  } catch {
    return false;
  }
}

/**
 * Lets an experiment script run itself: `tsx experiments/x.ts [flags]` behaves like
 * `marin run experiments/x.ts [flags]`. Does nothing when the script is imported (by the CLI or
 * by an iris task).
 *
 * @example
 * export default function build() { return [a, b]; }
 * await runIfMain(import.meta.url, build);
 */
export async function runIfMain(importMetaUrl: string, build: ExperimentBuild): Promise<void> {
  if (!isMainModule(importMetaUrl)) return;
  const script = fileURLToPath(importMetaUrl);
  preloaded.set(path.resolve(script), build);
  const { runCli } = await import("../cli/program.ts");
  const code = await runCli(["run", script, ...process.argv.slice(2)]);
  process.exitCode = code;
}
