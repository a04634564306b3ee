// The iris task entry that runs one step's body: rebuilds the graph, checks the identity, runs the step.
import path from "node:path";
import { getIrisCtx } from "@marin/iris/client";
import { formatZodIssues } from "@marin/iris/toolkit";
import { z } from "@marin/iris/toolkit";
import { MarinError } from "../errors.ts";
import { loadExperiment } from "../experiment/experiment.ts";
import { resolveGraph } from "../step/graph.ts";
import { checkPlannedIdentity } from "./stepIdentity.ts";
import type { PlannedIdentity } from "./stepIdentity.ts";

/** What the parent runner passes to a step's iris task. */
export interface StepTaskArgs {
  /** The experiment script: absolute, or relative to the task's code bundle (its working directory). */
  script: string;
  /** The step's name. */
  step: string;
  /** The identity the parent runner computed: the rebuilt step must have it. */
  planned: PlannedIdentity;
  prefix: string;
  /** The staging folder to write into. */
  staging: string;
}

const argsSchema = z.object({
  script: z.string().min(1),
  step: z.string().min(1),
  planned: z.object({
    id: z.string().min(1),
    identity: z.object({ config: z.json(), version: z.string().nullable(), deps: z.array(z.string()) }),
  }),
  prefix: z.string().min(1),
  staging: z.string().min(1),
});

/** The args as iris hands them over (JSON from another process): checked before anything runs. */
function parseArgs(args: unknown): StepTaskArgs {
  const parsed = argsSchema.safeParse(args);
  if (!parsed.success) throw new MarinError("INVALID_CONFIG", `marin step task: bad args: ${formatZodIssues(parsed.error)}`);
  return parsed.data as StepTaskArgs;
}

/**
 * The iris task entry for one step: imports the experiment script, rebuilds its step graph,
 * checks the step's identity against the parent's (a script edited since the run started must
 * not run under the old identity), and runs that step's body. Returns what the body returned: iris
 * records it as the task's result (JSON, at most 1 MiB). A MarinError of a deterministic kind
 * (bad args, a script that fails to load, an identity mismatch) is not retryable: iris ends the
 * attempt APP_ERROR with its code and message.
 */
export async function runStepTask(input: StepTaskArgs): Promise<unknown> {
  const args = parseArgs(input);
  // A bundled task runs at its bundle's root, where a relative script path points.
  args.script = path.resolve(args.script);
  const { steps } = await loadExperiment(args.script);
  const graph = resolveGraph(steps, args.prefix);
  const rs = checkPlannedIdentity(graph, args.step, args.planned, args.script);
  const abort = new AbortController();
  const onTerm = () => abort.abort(new MarinError("STEP_FAILED", "the iris task was terminated"));
  process.once("SIGTERM", onTerm);
  try {
    return await rs.step.fn({
      name: rs.name,
      id: rs.id,
      config: rs.config,
      outputPath: args.staging,
      finalPath: rs.outputPath,
      prefix: graph.prefix,
      signal: abort.signal,
      log: (line) => process.stdout.write(`${line}\n`),
      // The task's status report: the parent runner sees it in the job's status and shows it live.
      reportStatus: (text, metrics) =>
        void getIrisCtx()
          ?.reportStatus(text, metrics)
          .catch(() => undefined),
    });
  } finally {
    process.off("SIGTERM", onTerm);
  }
}
