// @marin/zephyr — lazy datasets. The one public entry of the package.
export { ZephyrError, ZEPHYR_ERROR_CODES } from "./errors.ts";
export type { ZephyrErrorCode } from "./errors.ts";

export { Dataset, fromList, fromIterable, fromFiles, readJsonl, readParquet, readText } from "./dataset.ts";
export type { JoinOptions, Joined, PipelineOrigin, ReadJsonlOptions, ReadParquetOptions, ShardContext, ShuffleOptions } from "./dataset.ts";
export { definePipeline } from "./pipeline.ts";
export type { Pipeline } from "./pipeline.ts";
export type { TaskContext } from "./plan/ops.ts";
export type { ColumnFilter, ColumnPredicate } from "./plan/columnFilter.ts";
export type { Plan, Stage } from "./plan/planner.ts";
export type { RunOptions, RunStats, StageStats, TokenCacheOptions, WriteOptions, WriteResult } from "./exec/coordinator.ts";
export type { BackendName, IrisBackendOptions } from "./exec/backends.ts";
export type { StageCounters } from "./exec/task.ts";
export { closeThreadPool } from "./exec/poolRegistry.ts";
