// @marin/marin — pipelines: steps, the executor, standard steps. The one public entry of the package.
export { MarinError, MARIN_ERROR_CODES } from "./errors.ts";
export type { MarinErrorCode } from "./errors.ts";

export { defineStep, outputOf, ignore, isStep, isOutputRef, isIgnored } from "./step/step.ts";
export type { Step, StepDefinition, StepContext, StepFn, StepResources, OutputRef, Ignored, Resolved } from "./step/step.ts";
export { resolveGraph, GraphBuilder } from "./step/graph.ts";
export type { StepGraph, ResolvedStep, StepIdentity } from "./step/graph.ts";
export { canonicalJson } from "./step/canonical.ts";
export type { JsonValue } from "./step/canonical.ts";

export { systemClock, FakeClock } from "./executor/clock.ts";
export type { Clock } from "./executor/clock.ts";
export { tryAcquireLease, currentLease, leaseIsStale, Lease } from "./executor/lease.ts";
export type { LeaseRecord, LeaseOptions, AcquireResult } from "./executor/lease.ts";
export { readStatus, STEP_STATES } from "./executor/stepFiles.ts";
export type { StepStatus, StepState } from "./executor/stepFiles.ts";
export { readLastRun } from "./executor/records.ts";
export type { StepInfo } from "./executor/records.ts";
export { diffIdentity } from "./executor/diff.ts";
export type { FieldChange } from "./executor/diff.ts";
export { planRun, formatPlan } from "./executor/plan.ts";
export type { Plan, PlanEntry, PlanAction, PlanOptions } from "./executor/plan.ts";
export { loadExperiment, runIfMain, isMainModule, resolveCliPath } from "./experiment/experiment.ts";
export type { ExperimentBuild } from "./experiment/experiment.ts";
export { runGraph } from "./executor/runner.ts";
export type { RunOptions, RunSummary, RunEvent, StepReport, StepOutcome, StepLauncher, LaunchArgs } from "./executor/runner.ts";
