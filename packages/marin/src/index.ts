// @marin/marin — pipelines: steps, the executor, standard steps. The main entry: what experiment
// scripts and programs that run them use; leases, diffs, the status files' writers and the iris step
// task stay inside. Beside it: `@marin/marin/status` (reading what runs left at a prefix) and
// `@marin/marin/testing` (clocks for tests).
export { MarinError, MARIN_ERROR_CODES } from "./errors.ts";
export type { MarinErrorCode } from "./errors.ts";

// Writing an experiment.
export { defineStep, outputOf, ignore, isStep } from "./step/step.ts";
export type { Step, StepDefinition, StepContext, StepFn, StepResources, OutputRef, Ignored, Resolved } from "./step/step.ts";
export type { JsonValue } from "./step/canonical.ts";
export { runIfMain } from "./cli/runIfMain.ts";
export type { ExperimentBuild } from "./experiment/experiment.ts";

// Running one from a program.
export { loadExperiment } from "./experiment/experiment.ts";
export { resolveGraph } from "./step/graph.ts";
export type { StepGraph, ResolvedStep, StepIdentity } from "./step/graph.ts";
export { planRun, formatPlan } from "./executor/plan.ts";
export type { RunPlan, PlanEntry, PlanAction, PlanOptions } from "./executor/plan.ts";
export type { FieldChange } from "./executor/diff.ts";
export { runGraph } from "./executor/runner.ts";
export type { RunGraphOptions, RunSummary, RunEvent, StepReport, StepOutcome, StepLauncher, LaunchArgs } from "./executor/runner.ts";
export { explainStep, formatExplanation } from "./executor/explain.ts";
export type { Explanation } from "./executor/explain.ts";
export { runCli } from "./cli/program.ts";

// The standard steps.
export { importCorpus } from "./steps/importCorpus.ts";
export type { ImportCorpusOptions } from "./steps/importCorpus.ts";
export { cleanText } from "./steps/cleanText.ts";
export type { CleanTextOptions } from "./steps/cleanText.ts";
export { dedupExact } from "./steps/dedupExact.ts";
export type { DedupExactOptions } from "./steps/dedupExact.ts";
export { dedupFuzzy } from "./steps/dedupFuzzy.ts";
export type { DedupFuzzyResult, DedupFuzzyStepOptions } from "./steps/dedupFuzzy.ts";
export { decontaminate } from "./steps/decontaminate.ts";
export type { DecontaminateEvalSet, DecontaminateResult, DecontaminateStepOptions } from "./steps/decontaminate.ts";
export { qualityFilter } from "./steps/qualityFilter.ts";
export type { QualityFilterResult, QualityFilterStepOptions } from "./steps/qualityFilter.ts";
export { tokenize, TRAIN_CACHE, VALIDATION_CACHE } from "./steps/tokenize.ts";
export type { TokenizeOptions } from "./steps/tokenize.ts";
export { trainTokenizer, TOKENIZER_JSON } from "./steps/trainTokenizer.ts";
export { holdOut } from "./steps/holdOut.ts";
export type { HoldOutOptions } from "./steps/holdOut.ts";
export type { TrainTokenizerOptions } from "./steps/trainTokenizer.ts";
export { readDocuments } from "./steps/documents.ts";
export type { Document } from "./steps/documents.ts";
export { trainLmStep, CHECKPOINTS } from "./steps/trainLmStep.ts";
export type { TrainLmStepOptions, TrainLmTrainerOptions } from "./steps/trainLmStep.ts";
export { evaluateLmStep } from "./steps/evaluateLmStep.ts";
export { importHfModel, exportModel, EXPORTED_GGUF, EXPORTED_MODEL } from "./steps/models.ts";
export type { ImportHfModelOptions, ExportModelOptions, ExportFormat, ExportGgufType } from "./steps/models.ts";
export type { EvaluateLmStepOptions } from "./steps/evaluateLmStep.ts";
export { generateText } from "./steps/generateText.ts";
export type { GenerateTextOptions } from "./steps/generateText.ts";
export { evaluateViaService } from "./steps/evaluateViaService.ts";
export type { EvaluateViaServiceOptions } from "./steps/evaluateViaService.ts";

// Serving a checkpoint (an iris job behind the endpoint serve/<name>).
export { remoteInference } from "./inference/remoteInference.ts";
export type { InferenceSession, RemoteInferenceOptions } from "./inference/remoteInference.ts";
export { scoreViaService } from "./inference/scoreViaService.ts";
export type { ScoreViaServiceOptions, ServiceScore } from "./inference/scoreViaService.ts";
