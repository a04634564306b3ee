// Experiment scripts: importing one and calling its default export to get its steps.
import path from "node:path";
import { pathToFileURL } from "node:url";
import { importModule } from "@marin/iris/loader";
import { MarinError } from "../errors.ts";
import { isStep } from "../step/step.ts";
import type { Step } from "../step/step.ts";

/** What an experiment script default-exports: builds and returns its steps (dependencies are found through the configs). */
export type ExperimentBuild = () => readonly Step<any>[] | Promise<readonly Step<any>[]>;

// Builds registered by a script that runs itself (see cli/runIfMain.ts): importing the script again
// from inside its own top-level await would wait on itself forever.
const preloaded = new Map<string, ExperimentBuild>();

/**
 * Registers the build of a script that is running itself, so that {@link loadExperiment} of that
 * script uses it instead of importing the script again (which would wait on its own top-level await).
 */
export function preloadExperiment(script: string, build: ExperimentBuild): void {
  preloaded.set(path.resolve(script), build);
}

/** Imports an experiment script and calls its default export; returns the absolute script path and the steps. */
export async function loadExperiment(script: string): Promise<{ script: string; steps: Step<any>[] }> {
  const abs = path.resolve(script);
  let mod: { default?: unknown };
  const known = preloaded.get(abs);
  if (known) mod = { default: known };
  else {
    try {
      mod = (await importModule(pathToFileURL(abs).href)) as { default?: unknown };
    } catch (e) {
      // A standard step's factory called at the script's top level rejected its options: say that, not "could not import".
      if (e instanceof MarinError) throw e;
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
