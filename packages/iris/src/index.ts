// @marin/iris — the distributed job runtime. The one public entry of the package.
export { IrisError, IRIS_ERROR_CODES, grpcStatusOf, irisCodeOf } from "./errors.ts";
export { MAX_TASK_RESULT_BYTES } from "./taskResult.ts";
export type { IrisErrorCode } from "./errors.ts";
export { assertNever, invariant } from "./internal/assert.ts";

export { IrisClient, defaultIrisUser } from "./client/irisClient.ts";
export type { IrisClientOptions, Job, WorkerSummary } from "./client/irisClient.ts";
export { LocalCluster } from "./localCluster.ts";
export type { LocalClusterOptions } from "./localCluster.ts";
export { Controller } from "./controller/controller.ts";
export type { ControllerOptions } from "./controller/controller.ts";
export { Worker } from "./worker/worker.ts";
export { constraintMatches, schedule } from "./controller/scheduler.ts";
export type { SchedConstraint, SchedResources, SchedResult, SchedSnapshot, SchedTask, SchedWorker } from "./controller/scheduler.ts";
export type { WorkerOptions } from "./worker/worker.ts";
export { jobSpecInputSchema, isTerminalJobState } from "./jobSpec.ts";
export type {
  AttemptStatus,
  Constraint,
  Endpoint,
  Entrypoint,
  FailureKind,
  JobSpec,
  JobSpecInput,
  JobState,
  JobStatus,
  LogEntry,
  MetricPoint,
  TaskState,
  TaskStatus,
} from "./jobSpec.ts";
export { createIrisContext, getIrisCtx, irisCtx, withIrisCtx } from "./context.ts";
export type { EndpointRegistration, EndpointRegistry, EndpointResolver, IrisContext } from "./context.ts";
