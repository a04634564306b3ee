// explainStep: why one step would (not) run, with its changed fields and upstream causes.
import { MarinError } from "../errors.ts";
import type { StepGraph } from "../step/graph.ts";
import { formatChanges } from "./diff.ts";
import type { FieldChange } from "./diff.ts";
import { planRun } from "./plan.ts";
import type { PlanAction, PlanOptions } from "./plan.ts";

/** Why a step would (not) run, with the field changes since the last run at the prefix. */
export interface Explanation {
  name: string;
  id: string;
  outputPath: string;
  action: PlanAction;
  reason: string;
  /** Fields that differ from the last run of this step name (empty when the identity is the same). */
  changes: FieldChange[];
  lastRunId: string | undefined;
  /** Dependencies whose identity changed since the last run, each with its own explanation. */
  upstream: Explanation[];
}

/** Explains step `name` (or `<name>-<hash>`) of `graph` against the files at the graph's prefix. */
export async function explainStep(graph: StepGraph, name: string, opts: PlanOptions = {}): Promise<Explanation> {
  const plan = await planRun(graph, opts);
  const entry = plan.byName.get(name) ?? plan.entries.find((e) => e.step.id === name);
  if (!entry) {
    throw new MarinError("NOT_FOUND", `no step named ${JSON.stringify(name)}; steps: ${plan.entries.map((e) => e.step.name).join(", ")}`);
  }
  const explain = (n: string): Explanation => {
    const e = plan.byName.get(n)!;
    const last = e.lastRun;
    const upstream =
      last && last.id !== e.step.id
        ? e.step.deps.filter((d) => !last.identity.deps.includes(d.id) && last.dependencies.some((o) => o.name === d.name)).map((d) => explain(d.name))
        : [];
    return {
      name: e.step.name,
      id: e.step.id,
      outputPath: e.step.outputPath,
      action: e.action,
      reason: e.reason,
      changes: e.changes,
      lastRunId: last?.id,
      upstream,
    };
  };
  return explain(entry.step.name);
}

/** An explanation as text for people. */
export function formatExplanation(x: Explanation, indent = ""): string[] {
  const lines = [`${indent}${x.name}: would ${x.action === "skip" ? "skip" : x.action === "wait" ? "wait" : "run"}`, `${indent}  output: ${x.outputPath}`];
  lines.push(...x.reason.split("\n").map((l, i) => `${indent}  ${i === 0 ? "why: " : ""}${l.trim()}`));
  if (x.lastRunId && x.lastRunId !== x.id) {
    lines.push(`${indent}  last run at this prefix: ${x.lastRunId}`);
    if (x.changes.length) {
      lines.push(`${indent}  changed fields (old → new):`);
      lines.push(...formatChanges(x.changes).map((c) => `${indent}    ${c}`));
    }
  }
  for (const u of x.upstream) {
    lines.push(`${indent}  because upstream step ${u.name} changed:`);
    lines.push(...formatExplanation(u, `${indent}    `));
  }
  return lines;
}
