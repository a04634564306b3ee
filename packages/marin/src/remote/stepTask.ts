// The iris task entry that runs one step's body: rebuilds the graph, checks the identity, runs the step.
import { MarinError } from "../errors.ts";
import { writeFileAtomic } from "../executor/stepFiles.ts";
import { loadExperiment } from "../experiment/experiment.ts";
import { resolveGraph } from "../step/graph.ts";

/** What the parent runner passes to a step's iris task. */
export interface StepTaskArgs {
  /** The experiment script (absolute path). */
  script: string;
  /** The step's name. */
  step: string;
  /** `<name>-<hash>` the parent computed: the fingerprint the rebuilt graph must match. */
  id: string;
  prefix: string;
  /** The staging folder to write into. */
  staging: string;
  /** Where to write `{ result }`. */
  resultFile: string;
}

/**
 * The iris task entry for one step: imports the experiment script, rebuilds its step graph,
 * checks the step's identity against the parent's (a script edited since the run started must
 * not run under the old identity), and runs that step's body.
 */
export async function runStepTask(args: StepTaskArgs): Promise<void> {
  const { steps } = await loadExperiment(args.script);
  const graph = resolveGraph(steps, args.prefix);
  const rs = graph.byName.get(args.step);
  if (!rs) throw new MarinError("FINGERPRINT_MISMATCH", `${args.script} no longer defines step ${args.step}`);
  if (rs.id !== args.id) {
    throw new MarinError("FINGERPRINT_MISMATCH", `step ${args.step}: the script now gives ${rs.id}, the runner planned ${args.id}; was the script edited during the run?`);
  }
  const abort = new AbortController();
  const onTerm = () => abort.abort(new MarinError("STEP_FAILED", "the iris task was terminated"));
  process.once("SIGTERM", onTerm);
  try {
    const result = await rs.step.fn({
      name: rs.name,
      id: rs.id,
      config: rs.config,
      outputPath: args.staging,
      finalPath: rs.outputPath,
      prefix: graph.prefix,
      signal: abort.signal,
      log: (line) => process.stdout.write(`${line}\n`),
    });
    await writeFileAtomic(args.resultFile, JSON.stringify({ result: result === undefined ? null : result }));
  } finally {
    process.off("SIGTERM", onTerm);
  }
}
