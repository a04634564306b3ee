// @marin/zephyr — lazy datasets. The one public entry of the package: sources, Dataset, pipelines,
// errors, and the types a user's code names (options, results, plans); no internals.
export { ZephyrError, ZEPHYR_ERROR_CODES } from "./errors.ts";
export type { ZephyrErrorCode } from "./errors.ts";

export { Dataset, connectedComponents, fromList, fromIterable, fromFiles, readJsonl, readParquet, readText } from "./dataset.ts";
export type {
  Contamination,
  DecontaminateOptions,
  DedupFuzzyOptions,
  EvalSet,
  QualityFilterOptions,
  JoinOptions,
  Joined,
  ReadJsonlOptions,
  ReadParquetOptions,
  ReadTextOptions,
  ShardContext,
  ShuffleOptions,
} from "./dataset.ts";
export { definePipeline } from "./pipeline.ts";
export type { Pipeline } from "./pipeline.ts";
export type { TaskContext } from "./plan/ops.ts";
export type { ColumnFilter, ColumnPredicate } from "./plan/columnFilter.ts";
export type { DatasetPlan, Stage } from "./plan/planner.ts";
export type {
  DatasetRunOptions,
  IrisBackendOptions,
  PipelineOrigin,
  RunStats,
  StageCounters,
  StageStats,
  TokenCacheOptions,
  WriteOptions,
  WriteResult,
  ZephyrBackendName,
} from "./exec/contracts.ts";
export { closeThreadPool } from "./exec/poolRegistry.ts";
export { DEFAULT_QUALITY_RULES, QUALITY_RULE_NAMES } from "./text/quality.ts";
export type { Bounds, QualityRuleName, QualityRules } from "./text/quality.ts";
export { lshParams } from "./text/minhash.ts";
