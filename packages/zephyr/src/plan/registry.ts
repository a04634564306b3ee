// The pipelines each module defines, by module URL and name: definePipeline registers a build
// here, and a worker (thread or iris task) imports the module and rebuilds the logical plan from
// the same arguments. Knows plans only as LogicalPlan, never the Dataset class.
import { importModule } from "@marin/iris/loader";
import { ZephyrError } from "../errors.ts";
import type { LogicalPlan } from "./ops.ts";

/** Builds a pipeline's logical plan from its JSON arguments (`undefined` for none). */
export type PipelineBuild = (args: unknown) => LogicalPlan;

const builds = new Map<string, PipelineBuild>();
const ordinals = new Map<string, number>();

function keyOf(url: string, name: string): string {
  return `${url}#${name}`;
}

/** The default name of the next pipeline `url` defines (`pipeline-0`, `pipeline-1`, …). */
export function nextPipelineName(url: string): string {
  const ordinal = ordinals.get(url) ?? 0;
  ordinals.set(url, ordinal + 1);
  return `pipeline-${ordinal}`;
}

/** Records how module `url` builds its pipeline `name`. */
export function registerPipeline(url: string, name: string, build: PipelineBuild): void {
  builds.set(keyOf(url, name), build);
}

/** Imports the module at `url` (registering its pipelines) and rebuilds pipeline `name`'s logical plan from `args`. */
export async function rebuildPipeline(url: string, name: string, args: unknown): Promise<LogicalPlan> {
  if (!builds.has(keyOf(url, name))) await importModule(url);
  const build = builds.get(keyOf(url, name));
  if (!build) throw new ZephyrError("FINGERPRINT_MISMATCH", `module ${url} defines no pipeline named ${name} (was it renamed, or defined conditionally?)`);
  return build(args === null ? undefined : args);
}
