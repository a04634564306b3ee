// `runIfMain`: an experiment script that is run directly (`tsx exp.ts`) behaves like `marin run exp.ts`.
import { realpathSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { preloadExperiment } from "../experiment/experiment.ts";
import type { ExperimentBuild } from "../experiment/experiment.ts";
import { runCli } from "./program.ts";

/** Whether the module at `importMetaUrl` is the program node was started with. */
function isMainModule(importMetaUrl: string): boolean {
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
  preloadExperiment(script, build);
  process.exitCode = await runCli(["run", script, ...process.argv.slice(2)]);
}
