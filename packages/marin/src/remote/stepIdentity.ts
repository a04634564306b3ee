// The step identity the runner computed, as handed down to a step's iris task, and the task's one check against it.
import { MarinError } from "../errors.ts";
import { diffIdentity, formatChanges } from "../executor/diff.ts";
import type { ResolvedStep, StepGraph, StepIdentity } from "../step/graph.ts";

/** A step's identity as the runner computed it when it planned the run (the task never recomputes the runner's). */
export interface PlannedIdentity {
  /** `<name>-<hash>`. */
  id: string;
  /** What the hash was computed over (so a mismatch can name the fields that differ). */
  identity: StepIdentity;
}

/** The identity of `rs` to hand down to its task. */
export function plannedIdentity(rs: ResolvedStep): PlannedIdentity {
  return { id: rs.id, identity: rs.identity };
}

/**
 * The step named `name` in the graph the task rebuilt, if its identity is the one the runner
 * planned. A script edited since the run started must not run under the old identity: otherwise
 * throws FINGERPRINT_MISMATCH (not retryable), naming both identities and the fields that differ.
 */
export function checkPlannedIdentity(graph: StepGraph, name: string, planned: PlannedIdentity, script: string): ResolvedStep {
  const rs = graph.byName.get(name);
  if (!rs) throw new MarinError("FINGERPRINT_MISMATCH", `${script} no longer defines step ${name}`);
  if (rs.id === planned.id) return rs;
  const changes = formatChanges(diffIdentity(planned.identity, rs.identity));
  throw new MarinError(
    "FINGERPRINT_MISMATCH",
    `step ${name}: the script now gives ${rs.id}, the runner planned ${planned.id}; was the script edited during the run?` +
      (changes.length ? ` Changed (planned → now): ${changes.join("; ")}` : ""),
  );
}
