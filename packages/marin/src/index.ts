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
export { importCorpus } from "./library/importCorpus.ts";
export type { ImportCorpusOptions } from "./library/importCorpus.ts";
export { cleanText } from "./library/cleanText.ts";
export type { CleanTextOptions } from "./library/cleanText.ts";
export { dedupExact } from "./library/dedupExact.ts";
export type { DedupExactOptions } from "./library/dedupExact.ts";
export { dedupFuzzy } from "./library/dedupFuzzy.ts";
export type { DedupFuzzyResult, DedupFuzzyStepOptions } from "./library/dedupFuzzy.ts";
export { decontaminate } from "./library/decontaminate.ts";
export type { DecontaminateEvalSet, DecontaminateResult, DecontaminateStepOptions } from "./library/decontaminate.ts";
export { qualityFilter } from "./library/qualityFilter.ts";
export type { QualityFilterResult, QualityFilterStepOptions } from "./library/qualityFilter.ts";
export { tokenize, TRAIN_CACHE, VALIDATION_CACHE } from "./library/tokenize.ts";
export type { TokenizeOptions } from "./library/tokenize.ts";
export { trainTokenizer, TOKENIZER_JSON } from "./library/trainTokenizer.ts";
export { holdOut } from "./library/holdOut.ts";
export type { HoldOutOptions } from "./library/holdOut.ts";
export type { TrainTokenizerOptions } from "./library/trainTokenizer.ts";
export { readDocuments } from "./library/documents.ts";
export type { Document } from "./library/documents.ts";
export { trainLmStep, CHECKPOINTS } from "./library/trainLmStep.ts";
export type { TrainLmStepOptions, TrainLmTrainerOptions } from "./library/trainLmStep.ts";
export { evaluateLmStep } from "./library/evaluateLmStep.ts";
export { importHfModel, exportModel, EXPORTED_GGUF, EXPORTED_MODEL } from "./library/models.ts";
export type { ImportHfModelOptions, ExportModelOptions, ExportFormat, ExportGgufType } from "./library/models.ts";
export type { EvaluateLmStepOptions } from "./library/evaluateLmStep.ts";
export { generateText } from "./library/generateText.ts";
export type { GenerateTextOptions } from "./library/generateText.ts";
export { evaluateViaService } from "./library/evaluateViaService.ts";
export type { EvaluateViaServiceOptions } from "./library/evaluateViaService.ts";

// Serving a checkpoint (an iris job behind the endpoint serve/<name>).
export { remoteInference } from "./service/remoteInference.ts";
export type { InferenceSession, RemoteInferenceOptions } from "./service/remoteInference.ts";
export { scoreViaService } from "./service/scoreViaService.ts";
export type { ScoreViaServiceOptions, ServiceScore } from "./service/scoreViaService.ts";
