// @marin/iris — the distributed job runtime. The one public entry of the package: what users of
// iris need (clusters, the client, the context API inside tasks, the daemons, the public types),
// and nothing of its internals (the scheduler, the wire codec, assertions).
export { IrisError, IRIS_ERROR_CODES } from "./errors.ts";
export type { IrisErrorCode } from "./errors.ts";
export { MAX_TASK_RESULT_BYTES } from "./taskResult.ts";

export { IrisClient } from "./client/irisClient.ts";
export type { BundleOption, IrisClientOptions, Job, SubmitOptions, UploadedBundle, WorkerSummary } from "./client/irisClient.ts";
export { LocalCluster, localWorkerCapacity } from "./localCluster.ts";
export type { LocalClusterOptions } from "./localCluster.ts";
export { Controller } from "./controller/controller.ts";
export type { ControllerOptions } from "./controller/controller.ts";
export { WorkerCredentials, DEFAULT_REGISTRATION_TTL_MS } from "./controller/workerCredentials.ts";
export { PROXY_TIMEOUT_KEY, DEFAULT_PROXY_TIMEOUT_MS, CAPABILITY_TTL_S } from "./http/endpointProxy.ts";
export { Worker } from "./worker/worker.ts";
export { credentialsFilePath, lookupToken, resolveToken } from "./credentials.ts";
export type { LocalAttemptInfo, WorkerEvent, WorkerOptions } from "./worker/worker.ts";
export { isTerminalJobState } from "./jobSpec.ts";
export { PIPELINE_NODE_STATES, PipelineNodeSchema, PipelineRecordSchema } from "./pipelineRecord.ts";
export type { PipelineNode, PipelineNodeState, PipelineRecord } from "./pipelineRecord.ts";
export type {
  AttemptStatus,
  Constraint,
  Endpoint,
  EndpointCapability,
  Entrypoint,
  FailureKind,
  JobSpec,
  JobSpecInput,
  JobState,
  JobStatus,
  LogEntry,
  MetricPoint,
  ResourceAmounts,
  TaskState,
  TaskStatus,
} from "./jobSpec.ts";
export { createIrisContext, getIrisCtx, irisCtx, withIrisCtx } from "./context.ts";
export type { EndpointRegistration, EndpointRegistry, EndpointResolver, IrisContext } from "./context.ts";
export type { TaskIdentity } from "./process/taskEnv.ts";
