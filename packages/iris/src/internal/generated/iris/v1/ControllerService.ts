// Original file: proto/iris/v1/controller.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { BundleInfo as _iris_v1_BundleInfo, BundleInfo__Output as _iris_v1_BundleInfo__Output } from '../../iris/v1/BundleInfo.ts';
import type { ClusterDownRequest as _iris_v1_ClusterDownRequest, ClusterDownRequest__Output as _iris_v1_ClusterDownRequest__Output } from '../../iris/v1/ClusterDownRequest.ts';
import type { ClusterDownResponse as _iris_v1_ClusterDownResponse, ClusterDownResponse__Output as _iris_v1_ClusterDownResponse__Output } from '../../iris/v1/ClusterDownResponse.ts';
import type { DrainWorkerRequest as _iris_v1_DrainWorkerRequest, DrainWorkerRequest__Output as _iris_v1_DrainWorkerRequest__Output } from '../../iris/v1/DrainWorkerRequest.ts';
import type { DrainWorkerResponse as _iris_v1_DrainWorkerResponse, DrainWorkerResponse__Output as _iris_v1_DrainWorkerResponse__Output } from '../../iris/v1/DrainWorkerResponse.ts';
import type { Endpoint as _iris_v1_Endpoint, Endpoint__Output as _iris_v1_Endpoint__Output } from '../../iris/v1/Endpoint.ts';
import type { GetBundleRequest as _iris_v1_GetBundleRequest, GetBundleRequest__Output as _iris_v1_GetBundleRequest__Output } from '../../iris/v1/GetBundleRequest.ts';
import type { GetClusterStatusRequest as _iris_v1_GetClusterStatusRequest, GetClusterStatusRequest__Output as _iris_v1_GetClusterStatusRequest__Output } from '../../iris/v1/GetClusterStatusRequest.ts';
import type { GetClusterStatusResponse as _iris_v1_GetClusterStatusResponse, GetClusterStatusResponse__Output as _iris_v1_GetClusterStatusResponse__Output } from '../../iris/v1/GetClusterStatusResponse.ts';
import type { GetJobRequest as _iris_v1_GetJobRequest, GetJobRequest__Output as _iris_v1_GetJobRequest__Output } from '../../iris/v1/GetJobRequest.ts';
import type { GetTaskMetricsRequest as _iris_v1_GetTaskMetricsRequest, GetTaskMetricsRequest__Output as _iris_v1_GetTaskMetricsRequest__Output } from '../../iris/v1/GetTaskMetricsRequest.ts';
import type { GetTaskMetricsResponse as _iris_v1_GetTaskMetricsResponse, GetTaskMetricsResponse__Output as _iris_v1_GetTaskMetricsResponse__Output } from '../../iris/v1/GetTaskMetricsResponse.ts';
import type { JobStatus as _iris_v1_JobStatus, JobStatus__Output as _iris_v1_JobStatus__Output } from '../../iris/v1/JobStatus.ts';
import type { LaunchJobRequest as _iris_v1_LaunchJobRequest, LaunchJobRequest__Output as _iris_v1_LaunchJobRequest__Output } from '../../iris/v1/LaunchJobRequest.ts';
import type { LaunchJobResponse as _iris_v1_LaunchJobResponse, LaunchJobResponse__Output as _iris_v1_LaunchJobResponse__Output } from '../../iris/v1/LaunchJobResponse.ts';
import type { ListEndpointsRequest as _iris_v1_ListEndpointsRequest, ListEndpointsRequest__Output as _iris_v1_ListEndpointsRequest__Output } from '../../iris/v1/ListEndpointsRequest.ts';
import type { ListEndpointsResponse as _iris_v1_ListEndpointsResponse, ListEndpointsResponse__Output as _iris_v1_ListEndpointsResponse__Output } from '../../iris/v1/ListEndpointsResponse.ts';
import type { ListJobsRequest as _iris_v1_ListJobsRequest, ListJobsRequest__Output as _iris_v1_ListJobsRequest__Output } from '../../iris/v1/ListJobsRequest.ts';
import type { ListJobsResponse as _iris_v1_ListJobsResponse, ListJobsResponse__Output as _iris_v1_ListJobsResponse__Output } from '../../iris/v1/ListJobsResponse.ts';
import type { ListTasksResponse as _iris_v1_ListTasksResponse, ListTasksResponse__Output as _iris_v1_ListTasksResponse__Output } from '../../iris/v1/ListTasksResponse.ts';
import type { ListWorkersRequest as _iris_v1_ListWorkersRequest, ListWorkersRequest__Output as _iris_v1_ListWorkersRequest__Output } from '../../iris/v1/ListWorkersRequest.ts';
import type { ListWorkersResponse as _iris_v1_ListWorkersResponse, ListWorkersResponse__Output as _iris_v1_ListWorkersResponse__Output } from '../../iris/v1/ListWorkersResponse.ts';
import type { LogBatch as _iris_v1_LogBatch, LogBatch__Output as _iris_v1_LogBatch__Output } from '../../iris/v1/LogBatch.ts';
import type { MintEndpointTokenRequest as _iris_v1_MintEndpointTokenRequest, MintEndpointTokenRequest__Output as _iris_v1_MintEndpointTokenRequest__Output } from '../../iris/v1/MintEndpointTokenRequest.ts';
import type { MintEndpointTokenResponse as _iris_v1_MintEndpointTokenResponse, MintEndpointTokenResponse__Output as _iris_v1_MintEndpointTokenResponse__Output } from '../../iris/v1/MintEndpointTokenResponse.ts';
import type { RegisterEndpointRequest as _iris_v1_RegisterEndpointRequest, RegisterEndpointRequest__Output as _iris_v1_RegisterEndpointRequest__Output } from '../../iris/v1/RegisterEndpointRequest.ts';
import type { ReportTaskStatusRequest as _iris_v1_ReportTaskStatusRequest, ReportTaskStatusRequest__Output as _iris_v1_ReportTaskStatusRequest__Output } from '../../iris/v1/ReportTaskStatusRequest.ts';
import type { ReportTaskStatusResponse as _iris_v1_ReportTaskStatusResponse, ReportTaskStatusResponse__Output as _iris_v1_ReportTaskStatusResponse__Output } from '../../iris/v1/ReportTaskStatusResponse.ts';
import type { ResolveEndpointRequest as _iris_v1_ResolveEndpointRequest, ResolveEndpointRequest__Output as _iris_v1_ResolveEndpointRequest__Output } from '../../iris/v1/ResolveEndpointRequest.ts';
import type { StreamLogsRequest as _iris_v1_StreamLogsRequest, StreamLogsRequest__Output as _iris_v1_StreamLogsRequest__Output } from '../../iris/v1/StreamLogsRequest.ts';
import type { TerminateJobRequest as _iris_v1_TerminateJobRequest, TerminateJobRequest__Output as _iris_v1_TerminateJobRequest__Output } from '../../iris/v1/TerminateJobRequest.ts';
import type { TerminateJobResponse as _iris_v1_TerminateJobResponse, TerminateJobResponse__Output as _iris_v1_TerminateJobResponse__Output } from '../../iris/v1/TerminateJobResponse.ts';
import type { UnregisterEndpointRequest as _iris_v1_UnregisterEndpointRequest, UnregisterEndpointRequest__Output as _iris_v1_UnregisterEndpointRequest__Output } from '../../iris/v1/UnregisterEndpointRequest.ts';
import type { UnregisterEndpointResponse as _iris_v1_UnregisterEndpointResponse, UnregisterEndpointResponse__Output as _iris_v1_UnregisterEndpointResponse__Output } from '../../iris/v1/UnregisterEndpointResponse.ts';
import type { UploadBundleRequest as _iris_v1_UploadBundleRequest, UploadBundleRequest__Output as _iris_v1_UploadBundleRequest__Output } from '../../iris/v1/UploadBundleRequest.ts';

export interface ControllerServiceClient extends grpc.Client {
  /**
   * Drains and stops every worker the autoscaler's providers started (admins only); the groups'
   * minWorkers are not restored until the next `iris cluster up`.
   */
  ClusterDown(argument: _iris_v1_ClusterDownRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ClusterDownResponse__Output>): grpc.ClientUnaryCall;
  ClusterDown(argument: _iris_v1_ClusterDownRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ClusterDownResponse__Output>): grpc.ClientUnaryCall;
  ClusterDown(argument: _iris_v1_ClusterDownRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ClusterDownResponse__Output>): grpc.ClientUnaryCall;
  ClusterDown(argument: _iris_v1_ClusterDownRequest, callback: grpc.requestCallback<_iris_v1_ClusterDownResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Drains and stops every worker the autoscaler's providers started (admins only); the groups'
   * minWorkers are not restored until the next `iris cluster up`.
   */
  clusterDown(argument: _iris_v1_ClusterDownRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ClusterDownResponse__Output>): grpc.ClientUnaryCall;
  clusterDown(argument: _iris_v1_ClusterDownRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ClusterDownResponse__Output>): grpc.ClientUnaryCall;
  clusterDown(argument: _iris_v1_ClusterDownRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ClusterDownResponse__Output>): grpc.ClientUnaryCall;
  clusterDown(argument: _iris_v1_ClusterDownRequest, callback: grpc.requestCallback<_iris_v1_ClusterDownResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Stop placing work on a worker and move its attempts elsewhere: they end PREEMPTED (charged to
   * the preemption budget) and are retried; the worker deregisters once it has nothing running.
   * NOT_FOUND for an unknown worker. Idempotent.
   */
  DrainWorker(argument: _iris_v1_DrainWorkerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_DrainWorkerResponse__Output>): grpc.ClientUnaryCall;
  DrainWorker(argument: _iris_v1_DrainWorkerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_DrainWorkerResponse__Output>): grpc.ClientUnaryCall;
  DrainWorker(argument: _iris_v1_DrainWorkerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_DrainWorkerResponse__Output>): grpc.ClientUnaryCall;
  DrainWorker(argument: _iris_v1_DrainWorkerRequest, callback: grpc.requestCallback<_iris_v1_DrainWorkerResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Stop placing work on a worker and move its attempts elsewhere: they end PREEMPTED (charged to
   * the preemption budget) and are retried; the worker deregisters once it has nothing running.
   * NOT_FOUND for an unknown worker. Idempotent.
   */
  drainWorker(argument: _iris_v1_DrainWorkerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_DrainWorkerResponse__Output>): grpc.ClientUnaryCall;
  drainWorker(argument: _iris_v1_DrainWorkerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_DrainWorkerResponse__Output>): grpc.ClientUnaryCall;
  drainWorker(argument: _iris_v1_DrainWorkerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_DrainWorkerResponse__Output>): grpc.ClientUnaryCall;
  drainWorker(argument: _iris_v1_DrainWorkerRequest, callback: grpc.requestCallback<_iris_v1_DrainWorkerResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Code bundles (content-addressed by the SHA-256 of their bytes). GetBundle: NOT_FOUND when the
   * controller does not hold it (then upload it). UploadBundle: the first message names the
   * bundle and its size, the others carry its bytes in order; INVALID_ARGUMENT when the bytes do
   * not hash to the id, RESOURCE_EXHAUSTED over the controller's size limit. Uploading a bundle
   * the controller already holds is cheap and returns the same answer.
   */
  GetBundle(argument: _iris_v1_GetBundleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientUnaryCall;
  GetBundle(argument: _iris_v1_GetBundleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientUnaryCall;
  GetBundle(argument: _iris_v1_GetBundleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientUnaryCall;
  GetBundle(argument: _iris_v1_GetBundleRequest, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientUnaryCall;
  /**
   * Code bundles (content-addressed by the SHA-256 of their bytes). GetBundle: NOT_FOUND when the
   * controller does not hold it (then upload it). UploadBundle: the first message names the
   * bundle and its size, the others carry its bytes in order; INVALID_ARGUMENT when the bytes do
   * not hash to the id, RESOURCE_EXHAUSTED over the controller's size limit. Uploading a bundle
   * the controller already holds is cheap and returns the same answer.
   */
  getBundle(argument: _iris_v1_GetBundleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientUnaryCall;
  getBundle(argument: _iris_v1_GetBundleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientUnaryCall;
  getBundle(argument: _iris_v1_GetBundleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientUnaryCall;
  getBundle(argument: _iris_v1_GetBundleRequest, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientUnaryCall;
  
  /**
   * The autoscaler of `iris cluster up`: its scale groups (workers by state, demand routed,
   * backoff) and its decision log, as JSON (see ClusterStatus in src/autoscaler/autoscaler.ts).
   * FAILED_PRECONDITION on a controller without an autoscaler.
   */
  GetClusterStatus(argument: _iris_v1_GetClusterStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_GetClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  GetClusterStatus(argument: _iris_v1_GetClusterStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_GetClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  GetClusterStatus(argument: _iris_v1_GetClusterStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_GetClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  GetClusterStatus(argument: _iris_v1_GetClusterStatusRequest, callback: grpc.requestCallback<_iris_v1_GetClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The autoscaler of `iris cluster up`: its scale groups (workers by state, demand routed,
   * backoff) and its decision log, as JSON (see ClusterStatus in src/autoscaler/autoscaler.ts).
   * FAILED_PRECONDITION on a controller without an autoscaler.
   */
  getClusterStatus(argument: _iris_v1_GetClusterStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_GetClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  getClusterStatus(argument: _iris_v1_GetClusterStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_GetClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  getClusterStatus(argument: _iris_v1_GetClusterStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_GetClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  getClusterStatus(argument: _iris_v1_GetClusterStatusRequest, callback: grpc.requestCallback<_iris_v1_GetClusterStatusResponse__Output>): grpc.ClientUnaryCall;
  
  GetJob(argument: _iris_v1_GetJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_JobStatus__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _iris_v1_GetJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_JobStatus__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _iris_v1_GetJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_JobStatus__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _iris_v1_GetJobRequest, callback: grpc.requestCallback<_iris_v1_JobStatus__Output>): grpc.ClientUnaryCall;
  getJob(argument: _iris_v1_GetJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_JobStatus__Output>): grpc.ClientUnaryCall;
  getJob(argument: _iris_v1_GetJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_JobStatus__Output>): grpc.ClientUnaryCall;
  getJob(argument: _iris_v1_GetJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_JobStatus__Output>): grpc.ClientUnaryCall;
  getJob(argument: _iris_v1_GetJobRequest, callback: grpc.requestCallback<_iris_v1_JobStatus__Output>): grpc.ClientUnaryCall;
  
  GetTaskMetrics(argument: _iris_v1_GetTaskMetricsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_GetTaskMetricsResponse__Output>): grpc.ClientUnaryCall;
  GetTaskMetrics(argument: _iris_v1_GetTaskMetricsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_GetTaskMetricsResponse__Output>): grpc.ClientUnaryCall;
  GetTaskMetrics(argument: _iris_v1_GetTaskMetricsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_GetTaskMetricsResponse__Output>): grpc.ClientUnaryCall;
  GetTaskMetrics(argument: _iris_v1_GetTaskMetricsRequest, callback: grpc.requestCallback<_iris_v1_GetTaskMetricsResponse__Output>): grpc.ClientUnaryCall;
  getTaskMetrics(argument: _iris_v1_GetTaskMetricsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_GetTaskMetricsResponse__Output>): grpc.ClientUnaryCall;
  getTaskMetrics(argument: _iris_v1_GetTaskMetricsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_GetTaskMetricsResponse__Output>): grpc.ClientUnaryCall;
  getTaskMetrics(argument: _iris_v1_GetTaskMetricsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_GetTaskMetricsResponse__Output>): grpc.ClientUnaryCall;
  getTaskMetrics(argument: _iris_v1_GetTaskMetricsRequest, callback: grpc.requestCallback<_iris_v1_GetTaskMetricsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Submit a job. ALREADY_EXISTS while a job of that name is not finished; INVALID_ARGUMENT for
   * a bad spec; NOT_FOUND / FAILED_PRECONDITION for a child whose parent is missing / finished.
   */
  LaunchJob(argument: _iris_v1_LaunchJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_LaunchJobResponse__Output>): grpc.ClientUnaryCall;
  LaunchJob(argument: _iris_v1_LaunchJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_LaunchJobResponse__Output>): grpc.ClientUnaryCall;
  LaunchJob(argument: _iris_v1_LaunchJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_LaunchJobResponse__Output>): grpc.ClientUnaryCall;
  LaunchJob(argument: _iris_v1_LaunchJobRequest, callback: grpc.requestCallback<_iris_v1_LaunchJobResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Submit a job. ALREADY_EXISTS while a job of that name is not finished; INVALID_ARGUMENT for
   * a bad spec; NOT_FOUND / FAILED_PRECONDITION for a child whose parent is missing / finished.
   */
  launchJob(argument: _iris_v1_LaunchJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_LaunchJobResponse__Output>): grpc.ClientUnaryCall;
  launchJob(argument: _iris_v1_LaunchJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_LaunchJobResponse__Output>): grpc.ClientUnaryCall;
  launchJob(argument: _iris_v1_LaunchJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_LaunchJobResponse__Output>): grpc.ClientUnaryCall;
  launchJob(argument: _iris_v1_LaunchJobRequest, callback: grpc.requestCallback<_iris_v1_LaunchJobResponse__Output>): grpc.ClientUnaryCall;
  
  ListEndpoints(argument: _iris_v1_ListEndpointsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListEndpointsResponse__Output>): grpc.ClientUnaryCall;
  ListEndpoints(argument: _iris_v1_ListEndpointsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ListEndpointsResponse__Output>): grpc.ClientUnaryCall;
  ListEndpoints(argument: _iris_v1_ListEndpointsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListEndpointsResponse__Output>): grpc.ClientUnaryCall;
  ListEndpoints(argument: _iris_v1_ListEndpointsRequest, callback: grpc.requestCallback<_iris_v1_ListEndpointsResponse__Output>): grpc.ClientUnaryCall;
  listEndpoints(argument: _iris_v1_ListEndpointsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListEndpointsResponse__Output>): grpc.ClientUnaryCall;
  listEndpoints(argument: _iris_v1_ListEndpointsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ListEndpointsResponse__Output>): grpc.ClientUnaryCall;
  listEndpoints(argument: _iris_v1_ListEndpointsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListEndpointsResponse__Output>): grpc.ClientUnaryCall;
  listEndpoints(argument: _iris_v1_ListEndpointsRequest, callback: grpc.requestCallback<_iris_v1_ListEndpointsResponse__Output>): grpc.ClientUnaryCall;
  
  ListJobs(argument: _iris_v1_ListJobsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _iris_v1_ListJobsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _iris_v1_ListJobsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _iris_v1_ListJobsRequest, callback: grpc.requestCallback<_iris_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _iris_v1_ListJobsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _iris_v1_ListJobsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _iris_v1_ListJobsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _iris_v1_ListJobsRequest, callback: grpc.requestCallback<_iris_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  
  ListTasks(argument: _iris_v1_GetJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListTasksResponse__Output>): grpc.ClientUnaryCall;
  ListTasks(argument: _iris_v1_GetJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ListTasksResponse__Output>): grpc.ClientUnaryCall;
  ListTasks(argument: _iris_v1_GetJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListTasksResponse__Output>): grpc.ClientUnaryCall;
  ListTasks(argument: _iris_v1_GetJobRequest, callback: grpc.requestCallback<_iris_v1_ListTasksResponse__Output>): grpc.ClientUnaryCall;
  listTasks(argument: _iris_v1_GetJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListTasksResponse__Output>): grpc.ClientUnaryCall;
  listTasks(argument: _iris_v1_GetJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ListTasksResponse__Output>): grpc.ClientUnaryCall;
  listTasks(argument: _iris_v1_GetJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListTasksResponse__Output>): grpc.ClientUnaryCall;
  listTasks(argument: _iris_v1_GetJobRequest, callback: grpc.requestCallback<_iris_v1_ListTasksResponse__Output>): grpc.ClientUnaryCall;
  
  ListWorkers(argument: _iris_v1_ListWorkersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  ListWorkers(argument: _iris_v1_ListWorkersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  ListWorkers(argument: _iris_v1_ListWorkersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  ListWorkers(argument: _iris_v1_ListWorkersRequest, callback: grpc.requestCallback<_iris_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  listWorkers(argument: _iris_v1_ListWorkersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  listWorkers(argument: _iris_v1_ListWorkersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  listWorkers(argument: _iris_v1_ListWorkersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  listWorkers(argument: _iris_v1_ListWorkersRequest, callback: grpc.requestCallback<_iris_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * A time-limited capability URL for one endpoint, served by the controller's HTTP proxy
   * (`/cap/<token>/<path>`; see the iris README). Only the endpoint's owner may mint one
   * (PERMISSION_DENIED otherwise); FAILED_PRECONDITION when the controller has no HTTP port.
   */
  MintEndpointToken(argument: _iris_v1_MintEndpointTokenRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_MintEndpointTokenResponse__Output>): grpc.ClientUnaryCall;
  MintEndpointToken(argument: _iris_v1_MintEndpointTokenRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_MintEndpointTokenResponse__Output>): grpc.ClientUnaryCall;
  MintEndpointToken(argument: _iris_v1_MintEndpointTokenRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_MintEndpointTokenResponse__Output>): grpc.ClientUnaryCall;
  MintEndpointToken(argument: _iris_v1_MintEndpointTokenRequest, callback: grpc.requestCallback<_iris_v1_MintEndpointTokenResponse__Output>): grpc.ClientUnaryCall;
  /**
   * A time-limited capability URL for one endpoint, served by the controller's HTTP proxy
   * (`/cap/<token>/<path>`; see the iris README). Only the endpoint's owner may mint one
   * (PERMISSION_DENIED otherwise); FAILED_PRECONDITION when the controller has no HTTP port.
   */
  mintEndpointToken(argument: _iris_v1_MintEndpointTokenRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_MintEndpointTokenResponse__Output>): grpc.ClientUnaryCall;
  mintEndpointToken(argument: _iris_v1_MintEndpointTokenRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_MintEndpointTokenResponse__Output>): grpc.ClientUnaryCall;
  mintEndpointToken(argument: _iris_v1_MintEndpointTokenRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_MintEndpointTokenResponse__Output>): grpc.ClientUnaryCall;
  mintEndpointToken(argument: _iris_v1_MintEndpointTokenRequest, callback: grpc.requestCallback<_iris_v1_MintEndpointTokenResponse__Output>): grpc.ClientUnaryCall;
  
  RegisterEndpoint(argument: _iris_v1_RegisterEndpointRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  RegisterEndpoint(argument: _iris_v1_RegisterEndpointRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  RegisterEndpoint(argument: _iris_v1_RegisterEndpointRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  RegisterEndpoint(argument: _iris_v1_RegisterEndpointRequest, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  registerEndpoint(argument: _iris_v1_RegisterEndpointRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  registerEndpoint(argument: _iris_v1_RegisterEndpointRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  registerEndpoint(argument: _iris_v1_RegisterEndpointRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  registerEndpoint(argument: _iris_v1_RegisterEndpointRequest, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  
  ReportTaskStatus(argument: _iris_v1_ReportTaskStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ReportTaskStatusResponse__Output>): grpc.ClientUnaryCall;
  ReportTaskStatus(argument: _iris_v1_ReportTaskStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ReportTaskStatusResponse__Output>): grpc.ClientUnaryCall;
  ReportTaskStatus(argument: _iris_v1_ReportTaskStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ReportTaskStatusResponse__Output>): grpc.ClientUnaryCall;
  ReportTaskStatus(argument: _iris_v1_ReportTaskStatusRequest, callback: grpc.requestCallback<_iris_v1_ReportTaskStatusResponse__Output>): grpc.ClientUnaryCall;
  reportTaskStatus(argument: _iris_v1_ReportTaskStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ReportTaskStatusResponse__Output>): grpc.ClientUnaryCall;
  reportTaskStatus(argument: _iris_v1_ReportTaskStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ReportTaskStatusResponse__Output>): grpc.ClientUnaryCall;
  reportTaskStatus(argument: _iris_v1_ReportTaskStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ReportTaskStatusResponse__Output>): grpc.ClientUnaryCall;
  reportTaskStatus(argument: _iris_v1_ReportTaskStatusRequest, callback: grpc.requestCallback<_iris_v1_ReportTaskStatusResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * NOT_FOUND when no endpoint has that name (callers retry with backoff).
   */
  ResolveEndpoint(argument: _iris_v1_ResolveEndpointRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  ResolveEndpoint(argument: _iris_v1_ResolveEndpointRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  ResolveEndpoint(argument: _iris_v1_ResolveEndpointRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  ResolveEndpoint(argument: _iris_v1_ResolveEndpointRequest, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  /**
   * NOT_FOUND when no endpoint has that name (callers retry with backoff).
   */
  resolveEndpoint(argument: _iris_v1_ResolveEndpointRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  resolveEndpoint(argument: _iris_v1_ResolveEndpointRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  resolveEndpoint(argument: _iris_v1_ResolveEndpointRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  resolveEndpoint(argument: _iris_v1_ResolveEndpointRequest, callback: grpc.requestCallback<_iris_v1_Endpoint__Output>): grpc.ClientUnaryCall;
  
  /**
   * The job's log lines in order; with `follow`, then new lines as they arrive until the job is
   * finished and its attempts' lines are all in.
   */
  StreamLogs(argument: _iris_v1_StreamLogsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_LogBatch__Output>;
  StreamLogs(argument: _iris_v1_StreamLogsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_LogBatch__Output>;
  /**
   * The job's log lines in order; with `follow`, then new lines as they arrive until the job is
   * finished and its attempts' lines are all in.
   */
  streamLogs(argument: _iris_v1_StreamLogsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_LogBatch__Output>;
  streamLogs(argument: _iris_v1_StreamLogsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_LogBatch__Output>;
  
  /**
   * Kill the job's tasks and, recursively, every child job. Idempotent on finished jobs.
   */
  TerminateJob(argument: _iris_v1_TerminateJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_TerminateJobResponse__Output>): grpc.ClientUnaryCall;
  TerminateJob(argument: _iris_v1_TerminateJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_TerminateJobResponse__Output>): grpc.ClientUnaryCall;
  TerminateJob(argument: _iris_v1_TerminateJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_TerminateJobResponse__Output>): grpc.ClientUnaryCall;
  TerminateJob(argument: _iris_v1_TerminateJobRequest, callback: grpc.requestCallback<_iris_v1_TerminateJobResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Kill the job's tasks and, recursively, every child job. Idempotent on finished jobs.
   */
  terminateJob(argument: _iris_v1_TerminateJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_TerminateJobResponse__Output>): grpc.ClientUnaryCall;
  terminateJob(argument: _iris_v1_TerminateJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_TerminateJobResponse__Output>): grpc.ClientUnaryCall;
  terminateJob(argument: _iris_v1_TerminateJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_TerminateJobResponse__Output>): grpc.ClientUnaryCall;
  terminateJob(argument: _iris_v1_TerminateJobRequest, callback: grpc.requestCallback<_iris_v1_TerminateJobResponse__Output>): grpc.ClientUnaryCall;
  
  UnregisterEndpoint(argument: _iris_v1_UnregisterEndpointRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_UnregisterEndpointResponse__Output>): grpc.ClientUnaryCall;
  UnregisterEndpoint(argument: _iris_v1_UnregisterEndpointRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_UnregisterEndpointResponse__Output>): grpc.ClientUnaryCall;
  UnregisterEndpoint(argument: _iris_v1_UnregisterEndpointRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_UnregisterEndpointResponse__Output>): grpc.ClientUnaryCall;
  UnregisterEndpoint(argument: _iris_v1_UnregisterEndpointRequest, callback: grpc.requestCallback<_iris_v1_UnregisterEndpointResponse__Output>): grpc.ClientUnaryCall;
  unregisterEndpoint(argument: _iris_v1_UnregisterEndpointRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_UnregisterEndpointResponse__Output>): grpc.ClientUnaryCall;
  unregisterEndpoint(argument: _iris_v1_UnregisterEndpointRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_UnregisterEndpointResponse__Output>): grpc.ClientUnaryCall;
  unregisterEndpoint(argument: _iris_v1_UnregisterEndpointRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_UnregisterEndpointResponse__Output>): grpc.ClientUnaryCall;
  unregisterEndpoint(argument: _iris_v1_UnregisterEndpointRequest, callback: grpc.requestCallback<_iris_v1_UnregisterEndpointResponse__Output>): grpc.ClientUnaryCall;
  
  UploadBundle(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientWritableStream<_iris_v1_UploadBundleRequest>;
  UploadBundle(metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientWritableStream<_iris_v1_UploadBundleRequest>;
  UploadBundle(options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientWritableStream<_iris_v1_UploadBundleRequest>;
  UploadBundle(callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientWritableStream<_iris_v1_UploadBundleRequest>;
  uploadBundle(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientWritableStream<_iris_v1_UploadBundleRequest>;
  uploadBundle(metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientWritableStream<_iris_v1_UploadBundleRequest>;
  uploadBundle(options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientWritableStream<_iris_v1_UploadBundleRequest>;
  uploadBundle(callback: grpc.requestCallback<_iris_v1_BundleInfo__Output>): grpc.ClientWritableStream<_iris_v1_UploadBundleRequest>;
  
  /**
   * The job's current status at once, then each change; the stream ends after a terminal state.
   */
  WatchJob(argument: _iris_v1_GetJobRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_JobStatus__Output>;
  WatchJob(argument: _iris_v1_GetJobRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_JobStatus__Output>;
  /**
   * The job's current status at once, then each change; the stream ends after a terminal state.
   */
  watchJob(argument: _iris_v1_GetJobRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_JobStatus__Output>;
  watchJob(argument: _iris_v1_GetJobRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_JobStatus__Output>;
  
}

export interface ControllerServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Drains and stops every worker the autoscaler's providers started (admins only); the groups'
   * minWorkers are not restored until the next `iris cluster up`.
   */
  ClusterDown: grpc.handleUnaryCall<_iris_v1_ClusterDownRequest__Output, _iris_v1_ClusterDownResponse>;
  
  /**
   * Stop placing work on a worker and move its attempts elsewhere: they end PREEMPTED (charged to
   * the preemption budget) and are retried; the worker deregisters once it has nothing running.
   * NOT_FOUND for an unknown worker. Idempotent.
   */
  DrainWorker: grpc.handleUnaryCall<_iris_v1_DrainWorkerRequest__Output, _iris_v1_DrainWorkerResponse>;
  
  /**
   * Code bundles (content-addressed by the SHA-256 of their bytes). GetBundle: NOT_FOUND when the
   * controller does not hold it (then upload it). UploadBundle: the first message names the
   * bundle and its size, the others carry its bytes in order; INVALID_ARGUMENT when the bytes do
   * not hash to the id, RESOURCE_EXHAUSTED over the controller's size limit. Uploading a bundle
   * the controller already holds is cheap and returns the same answer.
   */
  GetBundle: grpc.handleUnaryCall<_iris_v1_GetBundleRequest__Output, _iris_v1_BundleInfo>;
  
  /**
   * The autoscaler of `iris cluster up`: its scale groups (workers by state, demand routed,
   * backoff) and its decision log, as JSON (see ClusterStatus in src/autoscaler/autoscaler.ts).
   * FAILED_PRECONDITION on a controller without an autoscaler.
   */
  GetClusterStatus: grpc.handleUnaryCall<_iris_v1_GetClusterStatusRequest__Output, _iris_v1_GetClusterStatusResponse>;
  
  GetJob: grpc.handleUnaryCall<_iris_v1_GetJobRequest__Output, _iris_v1_JobStatus>;
  
  GetTaskMetrics: grpc.handleUnaryCall<_iris_v1_GetTaskMetricsRequest__Output, _iris_v1_GetTaskMetricsResponse>;
  
  /**
   * Submit a job. ALREADY_EXISTS while a job of that name is not finished; INVALID_ARGUMENT for
   * a bad spec; NOT_FOUND / FAILED_PRECONDITION for a child whose parent is missing / finished.
   */
  LaunchJob: grpc.handleUnaryCall<_iris_v1_LaunchJobRequest__Output, _iris_v1_LaunchJobResponse>;
  
  ListEndpoints: grpc.handleUnaryCall<_iris_v1_ListEndpointsRequest__Output, _iris_v1_ListEndpointsResponse>;
  
  ListJobs: grpc.handleUnaryCall<_iris_v1_ListJobsRequest__Output, _iris_v1_ListJobsResponse>;
  
  ListTasks: grpc.handleUnaryCall<_iris_v1_GetJobRequest__Output, _iris_v1_ListTasksResponse>;
  
  ListWorkers: grpc.handleUnaryCall<_iris_v1_ListWorkersRequest__Output, _iris_v1_ListWorkersResponse>;
  
  /**
   * A time-limited capability URL for one endpoint, served by the controller's HTTP proxy
   * (`/cap/<token>/<path>`; see the iris README). Only the endpoint's owner may mint one
   * (PERMISSION_DENIED otherwise); FAILED_PRECONDITION when the controller has no HTTP port.
   */
  MintEndpointToken: grpc.handleUnaryCall<_iris_v1_MintEndpointTokenRequest__Output, _iris_v1_MintEndpointTokenResponse>;
  
  RegisterEndpoint: grpc.handleUnaryCall<_iris_v1_RegisterEndpointRequest__Output, _iris_v1_Endpoint>;
  
  ReportTaskStatus: grpc.handleUnaryCall<_iris_v1_ReportTaskStatusRequest__Output, _iris_v1_ReportTaskStatusResponse>;
  
  /**
   * NOT_FOUND when no endpoint has that name (callers retry with backoff).
   */
  ResolveEndpoint: grpc.handleUnaryCall<_iris_v1_ResolveEndpointRequest__Output, _iris_v1_Endpoint>;
  
  /**
   * The job's log lines in order; with `follow`, then new lines as they arrive until the job is
   * finished and its attempts' lines are all in.
   */
  StreamLogs: grpc.handleServerStreamingCall<_iris_v1_StreamLogsRequest__Output, _iris_v1_LogBatch>;
  
  /**
   * Kill the job's tasks and, recursively, every child job. Idempotent on finished jobs.
   */
  TerminateJob: grpc.handleUnaryCall<_iris_v1_TerminateJobRequest__Output, _iris_v1_TerminateJobResponse>;
  
  UnregisterEndpoint: grpc.handleUnaryCall<_iris_v1_UnregisterEndpointRequest__Output, _iris_v1_UnregisterEndpointResponse>;
  
  UploadBundle: grpc.handleClientStreamingCall<_iris_v1_UploadBundleRequest__Output, _iris_v1_BundleInfo>;
  
  /**
   * The job's current status at once, then each change; the stream ends after a terminal state.
   */
  WatchJob: grpc.handleServerStreamingCall<_iris_v1_GetJobRequest__Output, _iris_v1_JobStatus>;
  
}

export interface ControllerServiceDefinition extends grpc.ServiceDefinition {
  ClusterDown: MethodDefinition<_iris_v1_ClusterDownRequest, _iris_v1_ClusterDownResponse, _iris_v1_ClusterDownRequest__Output, _iris_v1_ClusterDownResponse__Output>
  DrainWorker: MethodDefinition<_iris_v1_DrainWorkerRequest, _iris_v1_DrainWorkerResponse, _iris_v1_DrainWorkerRequest__Output, _iris_v1_DrainWorkerResponse__Output>
  GetBundle: MethodDefinition<_iris_v1_GetBundleRequest, _iris_v1_BundleInfo, _iris_v1_GetBundleRequest__Output, _iris_v1_BundleInfo__Output>
  GetClusterStatus: MethodDefinition<_iris_v1_GetClusterStatusRequest, _iris_v1_GetClusterStatusResponse, _iris_v1_GetClusterStatusRequest__Output, _iris_v1_GetClusterStatusResponse__Output>
  GetJob: MethodDefinition<_iris_v1_GetJobRequest, _iris_v1_JobStatus, _iris_v1_GetJobRequest__Output, _iris_v1_JobStatus__Output>
  GetTaskMetrics: MethodDefinition<_iris_v1_GetTaskMetricsRequest, _iris_v1_GetTaskMetricsResponse, _iris_v1_GetTaskMetricsRequest__Output, _iris_v1_GetTaskMetricsResponse__Output>
  LaunchJob: MethodDefinition<_iris_v1_LaunchJobRequest, _iris_v1_LaunchJobResponse, _iris_v1_LaunchJobRequest__Output, _iris_v1_LaunchJobResponse__Output>
  ListEndpoints: MethodDefinition<_iris_v1_ListEndpointsRequest, _iris_v1_ListEndpointsResponse, _iris_v1_ListEndpointsRequest__Output, _iris_v1_ListEndpointsResponse__Output>
  ListJobs: MethodDefinition<_iris_v1_ListJobsRequest, _iris_v1_ListJobsResponse, _iris_v1_ListJobsRequest__Output, _iris_v1_ListJobsResponse__Output>
  ListTasks: MethodDefinition<_iris_v1_GetJobRequest, _iris_v1_ListTasksResponse, _iris_v1_GetJobRequest__Output, _iris_v1_ListTasksResponse__Output>
  ListWorkers: MethodDefinition<_iris_v1_ListWorkersRequest, _iris_v1_ListWorkersResponse, _iris_v1_ListWorkersRequest__Output, _iris_v1_ListWorkersResponse__Output>
  MintEndpointToken: MethodDefinition<_iris_v1_MintEndpointTokenRequest, _iris_v1_MintEndpointTokenResponse, _iris_v1_MintEndpointTokenRequest__Output, _iris_v1_MintEndpointTokenResponse__Output>
  RegisterEndpoint: MethodDefinition<_iris_v1_RegisterEndpointRequest, _iris_v1_Endpoint, _iris_v1_RegisterEndpointRequest__Output, _iris_v1_Endpoint__Output>
  ReportTaskStatus: MethodDefinition<_iris_v1_ReportTaskStatusRequest, _iris_v1_ReportTaskStatusResponse, _iris_v1_ReportTaskStatusRequest__Output, _iris_v1_ReportTaskStatusResponse__Output>
  ResolveEndpoint: MethodDefinition<_iris_v1_ResolveEndpointRequest, _iris_v1_Endpoint, _iris_v1_ResolveEndpointRequest__Output, _iris_v1_Endpoint__Output>
  StreamLogs: MethodDefinition<_iris_v1_StreamLogsRequest, _iris_v1_LogBatch, _iris_v1_StreamLogsRequest__Output, _iris_v1_LogBatch__Output>
  TerminateJob: MethodDefinition<_iris_v1_TerminateJobRequest, _iris_v1_TerminateJobResponse, _iris_v1_TerminateJobRequest__Output, _iris_v1_TerminateJobResponse__Output>
  UnregisterEndpoint: MethodDefinition<_iris_v1_UnregisterEndpointRequest, _iris_v1_UnregisterEndpointResponse, _iris_v1_UnregisterEndpointRequest__Output, _iris_v1_UnregisterEndpointResponse__Output>
  UploadBundle: MethodDefinition<_iris_v1_UploadBundleRequest, _iris_v1_BundleInfo, _iris_v1_UploadBundleRequest__Output, _iris_v1_BundleInfo__Output>
  WatchJob: MethodDefinition<_iris_v1_GetJobRequest, _iris_v1_JobStatus, _iris_v1_GetJobRequest__Output, _iris_v1_JobStatus__Output>
}
