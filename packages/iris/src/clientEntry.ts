// @marin/iris/client — the part of @marin/iris for code that talks to a cluster without being one:
// the client, the context API inside tasks, the job and pipeline-record types, errors, the
// credentials file and the endpoint limits. Everything here is also on @marin/iris, which adds
// the controller, the worker and LocalCluster (SQLite, the gRPC and HTTP servers, the dashboard):
// about 0.2 CPU-s more to import, which a task runner, a training rank or a step task pays on every
// start without using any of it.
export { IrisError, IRIS_ERROR_CODES } from "./errors.ts";
export type { IrisErrorCode } from "./errors.ts";
export { MAX_TASK_RESULT_BYTES } from "./taskResult.ts";

export { IrisClient } from "./client/irisClient.ts";
export type { BundleOption, IrisClientOptions, Job, SubmitOptions, UploadedBundle, WorkerSummary } from "./client/irisClient.ts";
export { PROXY_TIMEOUT_KEY, DEFAULT_PROXY_TIMEOUT_MS, CAPABILITY_TTL_S } from "./endpointLimits.ts";
export { credentialsFilePath, lookupToken, resolveToken } from "./credentials.ts";
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
