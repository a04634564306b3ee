import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { AttemptStatus as _iris_v1_AttemptStatus, AttemptStatus__Output as _iris_v1_AttemptStatus__Output } from './iris/v1/AttemptStatus.ts';
import type { BundleInfo as _iris_v1_BundleInfo, BundleInfo__Output as _iris_v1_BundleInfo__Output } from './iris/v1/BundleInfo.ts';
import type { ClusterDownRequest as _iris_v1_ClusterDownRequest, ClusterDownRequest__Output as _iris_v1_ClusterDownRequest__Output } from './iris/v1/ClusterDownRequest.ts';
import type { ClusterDownResponse as _iris_v1_ClusterDownResponse, ClusterDownResponse__Output as _iris_v1_ClusterDownResponse__Output } from './iris/v1/ClusterDownResponse.ts';
import type { CommandEntrypoint as _iris_v1_CommandEntrypoint, CommandEntrypoint__Output as _iris_v1_CommandEntrypoint__Output } from './iris/v1/CommandEntrypoint.ts';
import type { Constraint as _iris_v1_Constraint, Constraint__Output as _iris_v1_Constraint__Output } from './iris/v1/Constraint.ts';
import type { ControllerServiceClient as _iris_v1_ControllerServiceClient, ControllerServiceDefinition as _iris_v1_ControllerServiceDefinition } from './iris/v1/ControllerService.ts';
import type { Device as _iris_v1_Device, Device__Output as _iris_v1_Device__Output } from './iris/v1/Device.ts';
import type { DrainWorkerRequest as _iris_v1_DrainWorkerRequest, DrainWorkerRequest__Output as _iris_v1_DrainWorkerRequest__Output } from './iris/v1/DrainWorkerRequest.ts';
import type { DrainWorkerResponse as _iris_v1_DrainWorkerResponse, DrainWorkerResponse__Output as _iris_v1_DrainWorkerResponse__Output } from './iris/v1/DrainWorkerResponse.ts';
import type { Endpoint as _iris_v1_Endpoint, Endpoint__Output as _iris_v1_Endpoint__Output } from './iris/v1/Endpoint.ts';
import type { Entrypoint as _iris_v1_Entrypoint, Entrypoint__Output as _iris_v1_Entrypoint__Output } from './iris/v1/Entrypoint.ts';
import type { GetBundleRequest as _iris_v1_GetBundleRequest, GetBundleRequest__Output as _iris_v1_GetBundleRequest__Output } from './iris/v1/GetBundleRequest.ts';
import type { GetClusterStatusRequest as _iris_v1_GetClusterStatusRequest, GetClusterStatusRequest__Output as _iris_v1_GetClusterStatusRequest__Output } from './iris/v1/GetClusterStatusRequest.ts';
import type { GetClusterStatusResponse as _iris_v1_GetClusterStatusResponse, GetClusterStatusResponse__Output as _iris_v1_GetClusterStatusResponse__Output } from './iris/v1/GetClusterStatusResponse.ts';
import type { GetJobRequest as _iris_v1_GetJobRequest, GetJobRequest__Output as _iris_v1_GetJobRequest__Output } from './iris/v1/GetJobRequest.ts';
import type { GetTaskMetricsRequest as _iris_v1_GetTaskMetricsRequest, GetTaskMetricsRequest__Output as _iris_v1_GetTaskMetricsRequest__Output } from './iris/v1/GetTaskMetricsRequest.ts';
import type { GetTaskMetricsResponse as _iris_v1_GetTaskMetricsResponse, GetTaskMetricsResponse__Output as _iris_v1_GetTaskMetricsResponse__Output } from './iris/v1/GetTaskMetricsResponse.ts';
import type { JobSpec as _iris_v1_JobSpec, JobSpec__Output as _iris_v1_JobSpec__Output } from './iris/v1/JobSpec.ts';
import type { JobStatus as _iris_v1_JobStatus, JobStatus__Output as _iris_v1_JobStatus__Output } from './iris/v1/JobStatus.ts';
import type { LaunchJobRequest as _iris_v1_LaunchJobRequest, LaunchJobRequest__Output as _iris_v1_LaunchJobRequest__Output } from './iris/v1/LaunchJobRequest.ts';
import type { LaunchJobResponse as _iris_v1_LaunchJobResponse, LaunchJobResponse__Output as _iris_v1_LaunchJobResponse__Output } from './iris/v1/LaunchJobResponse.ts';
import type { ListEndpointsRequest as _iris_v1_ListEndpointsRequest, ListEndpointsRequest__Output as _iris_v1_ListEndpointsRequest__Output } from './iris/v1/ListEndpointsRequest.ts';
import type { ListEndpointsResponse as _iris_v1_ListEndpointsResponse, ListEndpointsResponse__Output as _iris_v1_ListEndpointsResponse__Output } from './iris/v1/ListEndpointsResponse.ts';
import type { ListJobsRequest as _iris_v1_ListJobsRequest, ListJobsRequest__Output as _iris_v1_ListJobsRequest__Output } from './iris/v1/ListJobsRequest.ts';
import type { ListJobsResponse as _iris_v1_ListJobsResponse, ListJobsResponse__Output as _iris_v1_ListJobsResponse__Output } from './iris/v1/ListJobsResponse.ts';
import type { ListTasksResponse as _iris_v1_ListTasksResponse, ListTasksResponse__Output as _iris_v1_ListTasksResponse__Output } from './iris/v1/ListTasksResponse.ts';
import type { ListWorkersRequest as _iris_v1_ListWorkersRequest, ListWorkersRequest__Output as _iris_v1_ListWorkersRequest__Output } from './iris/v1/ListWorkersRequest.ts';
import type { ListWorkersResponse as _iris_v1_ListWorkersResponse, ListWorkersResponse__Output as _iris_v1_ListWorkersResponse__Output } from './iris/v1/ListWorkersResponse.ts';
import type { LogBatch as _iris_v1_LogBatch, LogBatch__Output as _iris_v1_LogBatch__Output } from './iris/v1/LogBatch.ts';
import type { LogEntry as _iris_v1_LogEntry, LogEntry__Output as _iris_v1_LogEntry__Output } from './iris/v1/LogEntry.ts';
import type { MetricPoint as _iris_v1_MetricPoint, MetricPoint__Output as _iris_v1_MetricPoint__Output } from './iris/v1/MetricPoint.ts';
import type { MintEndpointTokenRequest as _iris_v1_MintEndpointTokenRequest, MintEndpointTokenRequest__Output as _iris_v1_MintEndpointTokenRequest__Output } from './iris/v1/MintEndpointTokenRequest.ts';
import type { MintEndpointTokenResponse as _iris_v1_MintEndpointTokenResponse, MintEndpointTokenResponse__Output as _iris_v1_MintEndpointTokenResponse__Output } from './iris/v1/MintEndpointTokenResponse.ts';
import type { ModuleEntrypoint as _iris_v1_ModuleEntrypoint, ModuleEntrypoint__Output as _iris_v1_ModuleEntrypoint__Output } from './iris/v1/ModuleEntrypoint.ts';
import type { RegisterEndpointRequest as _iris_v1_RegisterEndpointRequest, RegisterEndpointRequest__Output as _iris_v1_RegisterEndpointRequest__Output } from './iris/v1/RegisterEndpointRequest.ts';
import type { ReportTaskStatusRequest as _iris_v1_ReportTaskStatusRequest, ReportTaskStatusRequest__Output as _iris_v1_ReportTaskStatusRequest__Output } from './iris/v1/ReportTaskStatusRequest.ts';
import type { ReportTaskStatusResponse as _iris_v1_ReportTaskStatusResponse, ReportTaskStatusResponse__Output as _iris_v1_ReportTaskStatusResponse__Output } from './iris/v1/ReportTaskStatusResponse.ts';
import type { ResolveEndpointRequest as _iris_v1_ResolveEndpointRequest, ResolveEndpointRequest__Output as _iris_v1_ResolveEndpointRequest__Output } from './iris/v1/ResolveEndpointRequest.ts';
import type { Resources as _iris_v1_Resources, Resources__Output as _iris_v1_Resources__Output } from './iris/v1/Resources.ts';
import type { StreamLogsRequest as _iris_v1_StreamLogsRequest, StreamLogsRequest__Output as _iris_v1_StreamLogsRequest__Output } from './iris/v1/StreamLogsRequest.ts';
import type { TaskStatus as _iris_v1_TaskStatus, TaskStatus__Output as _iris_v1_TaskStatus__Output } from './iris/v1/TaskStatus.ts';
import type { TerminateJobRequest as _iris_v1_TerminateJobRequest, TerminateJobRequest__Output as _iris_v1_TerminateJobRequest__Output } from './iris/v1/TerminateJobRequest.ts';
import type { TerminateJobResponse as _iris_v1_TerminateJobResponse, TerminateJobResponse__Output as _iris_v1_TerminateJobResponse__Output } from './iris/v1/TerminateJobResponse.ts';
import type { UnregisterEndpointRequest as _iris_v1_UnregisterEndpointRequest, UnregisterEndpointRequest__Output as _iris_v1_UnregisterEndpointRequest__Output } from './iris/v1/UnregisterEndpointRequest.ts';
import type { UnregisterEndpointResponse as _iris_v1_UnregisterEndpointResponse, UnregisterEndpointResponse__Output as _iris_v1_UnregisterEndpointResponse__Output } from './iris/v1/UnregisterEndpointResponse.ts';
import type { UploadBundleRequest as _iris_v1_UploadBundleRequest, UploadBundleRequest__Output as _iris_v1_UploadBundleRequest__Output } from './iris/v1/UploadBundleRequest.ts';
import type { WorkerInfo as _iris_v1_WorkerInfo, WorkerInfo__Output as _iris_v1_WorkerInfo__Output } from './iris/v1/WorkerInfo.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  iris: {
    v1: {
      AttemptStatus: MessageTypeDefinition<_iris_v1_AttemptStatus, _iris_v1_AttemptStatus__Output>
      BundleInfo: MessageTypeDefinition<_iris_v1_BundleInfo, _iris_v1_BundleInfo__Output>
      ClusterDownRequest: MessageTypeDefinition<_iris_v1_ClusterDownRequest, _iris_v1_ClusterDownRequest__Output>
      ClusterDownResponse: MessageTypeDefinition<_iris_v1_ClusterDownResponse, _iris_v1_ClusterDownResponse__Output>
      CommandEntrypoint: MessageTypeDefinition<_iris_v1_CommandEntrypoint, _iris_v1_CommandEntrypoint__Output>
      Constraint: MessageTypeDefinition<_iris_v1_Constraint, _iris_v1_Constraint__Output>
      ControllerService: SubtypeConstructor<typeof grpc.Client, _iris_v1_ControllerServiceClient> & { service: _iris_v1_ControllerServiceDefinition }
      Device: MessageTypeDefinition<_iris_v1_Device, _iris_v1_Device__Output>
      DrainWorkerRequest: MessageTypeDefinition<_iris_v1_DrainWorkerRequest, _iris_v1_DrainWorkerRequest__Output>
      DrainWorkerResponse: MessageTypeDefinition<_iris_v1_DrainWorkerResponse, _iris_v1_DrainWorkerResponse__Output>
      Endpoint: MessageTypeDefinition<_iris_v1_Endpoint, _iris_v1_Endpoint__Output>
      Entrypoint: MessageTypeDefinition<_iris_v1_Entrypoint, _iris_v1_Entrypoint__Output>
      GetBundleRequest: MessageTypeDefinition<_iris_v1_GetBundleRequest, _iris_v1_GetBundleRequest__Output>
      GetClusterStatusRequest: MessageTypeDefinition<_iris_v1_GetClusterStatusRequest, _iris_v1_GetClusterStatusRequest__Output>
      GetClusterStatusResponse: MessageTypeDefinition<_iris_v1_GetClusterStatusResponse, _iris_v1_GetClusterStatusResponse__Output>
      GetJobRequest: MessageTypeDefinition<_iris_v1_GetJobRequest, _iris_v1_GetJobRequest__Output>
      GetTaskMetricsRequest: MessageTypeDefinition<_iris_v1_GetTaskMetricsRequest, _iris_v1_GetTaskMetricsRequest__Output>
      GetTaskMetricsResponse: MessageTypeDefinition<_iris_v1_GetTaskMetricsResponse, _iris_v1_GetTaskMetricsResponse__Output>
      JobSpec: MessageTypeDefinition<_iris_v1_JobSpec, _iris_v1_JobSpec__Output>
      JobStatus: MessageTypeDefinition<_iris_v1_JobStatus, _iris_v1_JobStatus__Output>
      LaunchJobRequest: MessageTypeDefinition<_iris_v1_LaunchJobRequest, _iris_v1_LaunchJobRequest__Output>
      LaunchJobResponse: MessageTypeDefinition<_iris_v1_LaunchJobResponse, _iris_v1_LaunchJobResponse__Output>
      ListEndpointsRequest: MessageTypeDefinition<_iris_v1_ListEndpointsRequest, _iris_v1_ListEndpointsRequest__Output>
      ListEndpointsResponse: MessageTypeDefinition<_iris_v1_ListEndpointsResponse, _iris_v1_ListEndpointsResponse__Output>
      ListJobsRequest: MessageTypeDefinition<_iris_v1_ListJobsRequest, _iris_v1_ListJobsRequest__Output>
      ListJobsResponse: MessageTypeDefinition<_iris_v1_ListJobsResponse, _iris_v1_ListJobsResponse__Output>
      ListTasksResponse: MessageTypeDefinition<_iris_v1_ListTasksResponse, _iris_v1_ListTasksResponse__Output>
      ListWorkersRequest: MessageTypeDefinition<_iris_v1_ListWorkersRequest, _iris_v1_ListWorkersRequest__Output>
      ListWorkersResponse: MessageTypeDefinition<_iris_v1_ListWorkersResponse, _iris_v1_ListWorkersResponse__Output>
      LogBatch: MessageTypeDefinition<_iris_v1_LogBatch, _iris_v1_LogBatch__Output>
      LogEntry: MessageTypeDefinition<_iris_v1_LogEntry, _iris_v1_LogEntry__Output>
      MetricPoint: MessageTypeDefinition<_iris_v1_MetricPoint, _iris_v1_MetricPoint__Output>
      MintEndpointTokenRequest: MessageTypeDefinition<_iris_v1_MintEndpointTokenRequest, _iris_v1_MintEndpointTokenRequest__Output>
      MintEndpointTokenResponse: MessageTypeDefinition<_iris_v1_MintEndpointTokenResponse, _iris_v1_MintEndpointTokenResponse__Output>
      ModuleEntrypoint: MessageTypeDefinition<_iris_v1_ModuleEntrypoint, _iris_v1_ModuleEntrypoint__Output>
      RegisterEndpointRequest: MessageTypeDefinition<_iris_v1_RegisterEndpointRequest, _iris_v1_RegisterEndpointRequest__Output>
      ReportTaskStatusRequest: MessageTypeDefinition<_iris_v1_ReportTaskStatusRequest, _iris_v1_ReportTaskStatusRequest__Output>
      ReportTaskStatusResponse: MessageTypeDefinition<_iris_v1_ReportTaskStatusResponse, _iris_v1_ReportTaskStatusResponse__Output>
      ResolveEndpointRequest: MessageTypeDefinition<_iris_v1_ResolveEndpointRequest, _iris_v1_ResolveEndpointRequest__Output>
      Resources: MessageTypeDefinition<_iris_v1_Resources, _iris_v1_Resources__Output>
      StreamLogsRequest: MessageTypeDefinition<_iris_v1_StreamLogsRequest, _iris_v1_StreamLogsRequest__Output>
      TaskStatus: MessageTypeDefinition<_iris_v1_TaskStatus, _iris_v1_TaskStatus__Output>
      TerminateJobRequest: MessageTypeDefinition<_iris_v1_TerminateJobRequest, _iris_v1_TerminateJobRequest__Output>
      TerminateJobResponse: MessageTypeDefinition<_iris_v1_TerminateJobResponse, _iris_v1_TerminateJobResponse__Output>
      UnregisterEndpointRequest: MessageTypeDefinition<_iris_v1_UnregisterEndpointRequest, _iris_v1_UnregisterEndpointRequest__Output>
      UnregisterEndpointResponse: MessageTypeDefinition<_iris_v1_UnregisterEndpointResponse, _iris_v1_UnregisterEndpointResponse__Output>
      UploadBundleRequest: MessageTypeDefinition<_iris_v1_UploadBundleRequest, _iris_v1_UploadBundleRequest__Output>
      WorkerInfo: MessageTypeDefinition<_iris_v1_WorkerInfo, _iris_v1_WorkerInfo__Output>
    }
  }
}

