// The iris backend: each shard of a stage is one task of an iris job.
import type { PipelineOrigin } from "../dataset.ts";
import { ZephyrError } from "../errors.ts";
import type { Plan } from "../plan/planner.ts";
import type { Backend, IrisBackendOptions } from "./backends.ts";

/** Creates the iris backend. */
export function irisBackend(_origin: PipelineOrigin, _plan: Plan, _opts: IrisBackendOptions, _scratch: string): Backend {
  throw new ZephyrError("MISSING_DEPENDENCY", "the iris backend is not available yet");
}
