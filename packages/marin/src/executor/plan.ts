// planRun: what a run would do with each step (run, skip, wait) and why, from the files at the prefix.
import { promises as fs } from "node:fs";
import path from "node:path";
import { MarinError } from "../errors.ts";
import type { ResolvedStep, StepGraph } from "../step/graph.ts";
import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";
import { diffIdentity, formatChanges } from "./diff.ts";
import type { FieldChange } from "./diff.ts";
import { currentLease, leaseIsStale } from "./lease.ts";
import { readLastRun } from "./records.ts";
import type { StepRunInfo } from "./records.ts";
import { pendingJournal } from "./publish.ts";
import { metaDir, readStatus, stagingDir, stagingTokens } from "./stepFiles.ts";
import type { StepStatus } from "./stepFiles.ts";

/** What the runner will do with a step. */
export type PlanAction = "run" | "skip" | "wait";

/** One step of a plan, with the reason for its action. */
export interface PlanEntry {
  readonly step: ResolvedStep;
  action: PlanAction;
  reason: string;
  /** Whether `--only` selected it (or it is a needed dependency of a selected step). */
  readonly selected: boolean;
  readonly forced: boolean;
  readonly status: StepStatus | undefined;
  /** The last run of a step with this name at the prefix (any config). */
  readonly lastRun: StepRunInfo | undefined;
  /** Changes from the last run's config when that run had another identity. */
  readonly changes: FieldChange[];
  /** A succeeded step whose function's source differs from the one that wrote its output. */
  readonly codeChanged: boolean;
}

/** What plan, explain and run say about a cached step whose function changed. */
export const CODE_CHANGED = "code changed since this output was written (identity is config + version: bump the step's `version`, or rerun it with --force, to redo it)";

/** A plan: every step of the graph, in topological order. */
export interface RunPlan {
  readonly graph: StepGraph;
  readonly entries: PlanEntry[];
  readonly byName: ReadonlyMap<string, PlanEntry>;
  /** `--only` patterns that matched no step. */
  readonly unmatched: string[];
}

/** How to choose and force steps. */
export interface PlanOptions {
  /** Regexes searched in step names: run those steps and, as needed, their dependencies. */
  only?: string[];
  /** Regexes searched in step names: run those steps even if they succeeded before. */
  force?: string[];
  clock?: Clock;
}

function compile(patterns: string[] | undefined, flag: string): RegExp[] {
  return (patterns ?? []).map((p) => {
    try {
      return new RegExp(p);
    } catch (e) {
      throw new MarinError("INVALID_CONFIG", `${flag} ${JSON.stringify(p)}: not a valid regular expression`, { cause: e });
    }
  });
}

/** A staging folder's checkpoint folders (`step-N` holding a `metadata.json`, at most two levels down), newest first. */
async function checkpointSteps(staging: string): Promise<number[]> {
  const found: number[] = [];
  const look = async (dir: string, depth: number): Promise<void> => {
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const m = /^step-(\d+)$/.exec(e.name);
      if (m) {
        if (
          await fs.stat(path.join(dir, e.name, "metadata.json")).then(
            () => true,
            () => false,
          )
        )
          found.push(Number(m[1]));
      } else if (depth < 2) {
        await look(path.join(dir, e.name), depth + 1);
      }
    }
  };
  await look(staging, 1);
  return found.sort((a, b) => b - a);
}

/**
 * Where a resumable step would resume: the newest complete `step-N` checkpoint in its newest
 * staging folder (`step-N (staging-M)`), if any. Reads only.
 */
async function resumePoint(outputPath: string): Promise<string | undefined> {
  const [newest] = await stagingTokens(outputPath);
  if (newest === undefined) return undefined;
  const [step] = await checkpointSteps(stagingDir(outputPath, newest));
  return step === undefined ? undefined : `step-${step} (its checkpoint in staging-${newest})`;
}

/**
 * Decides, from the files at the prefix, what a run would do. Reads only; writes nothing. Steps
 * already SUCCESS are skipped and their dependencies are not needed for them (pruning from the top).
 */
export async function planRun(graph: StepGraph, opts: PlanOptions = {}): Promise<RunPlan> {
  const clock = opts.clock ?? systemClock;
  const only = compile(opts.only, "--only");
  const force = compile(opts.force, "--force");
  const forcedOf = (s: ResolvedStep) => force.some((r) => r.test(s.name));
  const statuses = await Promise.all(graph.steps.map((s) => readStatus(s.outputPath)));
  // A finished step needs no lease or history lookup unless it is forced: keeps the all-cached
  // check at one small read per step.
  const needsDetail = (i: number) => statuses[i]?.state !== "SUCCESS" || forcedOf(graph.steps[i]);
  const [lasts, leases, journals, resumes] = await Promise.all([
    Promise.all(graph.steps.map((s, i) => (needsDetail(i) ? readLastRun(graph.prefix, s.name) : undefined))),
    Promise.all(graph.steps.map((s, i) => (needsDetail(i) && statuses[i]?.state === "RUNNING" ? currentLease(metaDir(s.outputPath)) : undefined))),
    Promise.all(graph.steps.map((s, i) => (statuses[i] && statuses[i].state !== "SUCCESS" ? pendingJournal(s.outputPath) : undefined))),
    Promise.all(graph.steps.map((s, i) => (statuses[i] && statuses[i].state !== "SUCCESS" && s.step.resumable ? resumePoint(s.outputPath) : undefined))),
  ]);
  const now = clock.now();
  const index = new Map(graph.steps.map((s, i) => [s.id, i]));

  const needed = new Set<string>();
  const visit = (s: ResolvedStep): void => {
    if (needed.has(s.id)) return;
    needed.add(s.id);
    const st = statuses[index.get(s.id)!];
    if (st?.state === "SUCCESS" && !forcedOf(s)) return;
    s.deps.forEach(visit);
  };
  const targets = only.length ? graph.steps.filter((s) => only.some((r) => r.test(s.name))) : graph.steps;
  targets.forEach(visit);
  const unmatched = (opts.only ?? []).filter((_p, i) => !graph.steps.some((s) => only[i].test(s.name)));

  const entries: PlanEntry[] = graph.steps.map((s, i) => {
    const status = statuses[i];
    const lastRun = lasts[i];
    const lease = leases[i];
    const forced = forcedOf(s);
    const selected = needed.has(s.id);
    const changes = lastRun && lastRun.id !== s.id ? diffIdentity(lastRun.identity, s.identity) : [];
    const codeChanged = status?.state === "SUCCESS" && status.codeHash !== undefined && status.codeHash !== s.codeHash;
    let action: PlanAction;
    let reason: string;
    if (!selected) {
      action = "skip";
      reason = "not selected by --only";
    } else if (status?.state === "SUCCESS" && !forced) {
      action = "skip";
      reason = codeChanged ? `already succeeded; ${CODE_CHANGED}` : "already succeeded";
    } else if (status?.state === "SUCCESS") {
      action = "run";
      reason = "forced by --force (succeeded before)";
    } else if (status?.state === "RUNNING" && lease && !leaseIsStale(lease, now)) {
      action = "wait";
      reason = `RUNNING under ${lease.owner} (lease live); would wait for it`;
    } else if (journals[i]) {
      action = "run";
      reason = `publish pending: an interrupted publish (journal of token ${journals[i].token}) waits; would complete it without running the step`;
    } else if (status?.state === "RUNNING") {
      action = "run";
      reason = `RUNNING with a stale lease${lease ? ` (owner ${lease.owner})` : ""}; would take over`;
    } else if (status?.state === "FAILED") {
      action = "run";
      reason = `previous attempt FAILED${status.error ? `: ${status.error.split("\n")[0]}` : ""}; would rerun`;
    } else if (status?.state === "DEP_FAILED") {
      action = "run";
      reason = "a dependency failed last time; would rerun";
    } else if (status?.state === "CANCELLED") {
      action = "run";
      reason = `CANCELLED last time${status.error?.startsWith("dependency") ? ` (${status.error})` : ""}; would rerun`;
    } else if (lastRun && lastRun.id !== s.id) {
      action = "run";
      reason = `identity changed since the last run at this prefix (${lastRun.id} → ${s.id})`;
    } else {
      action = "run";
      reason = "never ran at this prefix";
    }
    const resume = resumes[i];
    if (action === "run" && resume && !journals[i]) reason += `; would resume from ${resume}`;
    return { step: s, action, reason, selected, forced, status, lastRun, changes, codeChanged };
  });
  return { graph, entries, byName: new Map(entries.map((e) => [e.step.name, e])), unmatched };
}

/** The plan as text lines: `run   name   path   reason`. */
export function formatPlan(plan: RunPlan): string[] {
  const width = Math.max(4, ...plan.entries.map((e) => e.step.name.length));
  const lines = plan.entries.map((e) =>
    [`${e.action.padEnd(5)} ${e.step.name.padEnd(width)}  ${e.step.outputPath}`, `      ${e.reason}`, ...formatChanges(e.changes).map((c) => `        ${c}`)].join("\n"),
  );
  const count = (a: PlanAction) => plan.entries.filter((e) => e.action === a).length;
  lines.push(`${plan.entries.length} step(s): ${count("run")} to run, ${count("skip")} to skip, ${count("wait")} to wait for`);
  for (const u of plan.unmatched) lines.push(`warning: --only ${JSON.stringify(u)} matched no step`);
  return lines;
}
