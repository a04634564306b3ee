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
export { explainStep, formatExplanation } from "./executor/explain.ts";
export type { Explanation } from "./executor/explain.ts";
export { listPrefix } from "./executor/prefixStatus.ts";
export type { PrefixEntry } from "./executor/prefixStatus.ts";
export { runCli } from "./cli/program.ts";
export type { RunOptions, RunSummary, RunEvent, StepReport, StepOutcome, StepLauncher, LaunchArgs } from "./executor/runner.ts";

export { importCorpus } from "./steps/importCorpus.ts";
export type { ImportCorpusOptions } from "./steps/importCorpus.ts";
export { cleanText, stripWordTags, cleanDocumentText, keepText } from "./steps/cleanText.ts";
export type { CleanTextOptions, CleanTextConfig } from "./steps/cleanText.ts";
export { dedupExact, exactKey } from "./steps/dedupExact.ts";
export type { DedupExactOptions } from "./steps/dedupExact.ts";
export { tokenize, isValidationDoc, TRAIN_CACHE, VALIDATION_CACHE } from "./steps/tokenize.ts";
export type { TokenizeOptions, TokenizeConfig } from "./steps/tokenize.ts";
export { readDocuments } from "./steps/documents.ts";
export type { Document } from "./steps/documents.ts";
export { trainLm, CHECKPOINTS } from "./steps/trainLm.ts";
export type { TrainLmOptions, TrainLmTrainerOptions } from "./steps/trainLm.ts";
export { evaluateLm } from "./steps/evaluateLm.ts";
export type { EvaluateLmOptions } from "./steps/evaluateLm.ts";
export { generateText } from "./steps/generateText.ts";
export type { GenerateTextOptions } from "./steps/generateText.ts";
