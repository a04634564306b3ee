import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { AssignmentNotice as _iris_v1_AssignmentNotice, AssignmentNotice__Output as _iris_v1_AssignmentNotice__Output } from './iris/v1/AssignmentNotice.ts';
import type { AttemptObservation as _iris_v1_AttemptObservation, AttemptObservation__Output as _iris_v1_AttemptObservation__Output } from './iris/v1/AttemptObservation.ts';
import type { AttemptStatus as _iris_v1_AttemptStatus, AttemptStatus__Output as _iris_v1_AttemptStatus__Output } from './iris/v1/AttemptStatus.ts';
import type { BundleChunk as _iris_v1_BundleChunk, BundleChunk__Output as _iris_v1_BundleChunk__Output } from './iris/v1/BundleChunk.ts';
import type { CommandEntrypoint as _iris_v1_CommandEntrypoint, CommandEntrypoint__Output as _iris_v1_CommandEntrypoint__Output } from './iris/v1/CommandEntrypoint.ts';
import type { Constraint as _iris_v1_Constraint, Constraint__Output as _iris_v1_Constraint__Output } from './iris/v1/Constraint.ts';
import type { DeregisterWorkerRequest as _iris_v1_DeregisterWorkerRequest, DeregisterWorkerRequest__Output as _iris_v1_DeregisterWorkerRequest__Output } from './iris/v1/DeregisterWorkerRequest.ts';
import type { DeregisterWorkerResponse as _iris_v1_DeregisterWorkerResponse, DeregisterWorkerResponse__Output as _iris_v1_DeregisterWorkerResponse__Output } from './iris/v1/DeregisterWorkerResponse.ts';
import type { Device as _iris_v1_Device, Device__Output as _iris_v1_Device__Output } from './iris/v1/Device.ts';
import type { Endpoint as _iris_v1_Endpoint, Endpoint__Output as _iris_v1_Endpoint__Output } from './iris/v1/Endpoint.ts';
import type { Entrypoint as _iris_v1_Entrypoint, Entrypoint__Output as _iris_v1_Entrypoint__Output } from './iris/v1/Entrypoint.ts';
import type { FetchBundleRequest as _iris_v1_FetchBundleRequest, FetchBundleRequest__Output as _iris_v1_FetchBundleRequest__Output } from './iris/v1/FetchBundleRequest.ts';
import type { JobSpec as _iris_v1_JobSpec, JobSpec__Output as _iris_v1_JobSpec__Output } from './iris/v1/JobSpec.ts';
import type { JobStatus as _iris_v1_JobStatus, JobStatus__Output as _iris_v1_JobStatus__Output } from './iris/v1/JobStatus.ts';
import type { LogEntry as _iris_v1_LogEntry, LogEntry__Output as _iris_v1_LogEntry__Output } from './iris/v1/LogEntry.ts';
import type { LogLine as _iris_v1_LogLine, LogLine__Output as _iris_v1_LogLine__Output } from './iris/v1/LogLine.ts';
import type { MetricPoint as _iris_v1_MetricPoint, MetricPoint__Output as _iris_v1_MetricPoint__Output } from './iris/v1/MetricPoint.ts';
import type { ModuleEntrypoint as _iris_v1_ModuleEntrypoint, ModuleEntrypoint__Output as _iris_v1_ModuleEntrypoint__Output } from './iris/v1/ModuleEntrypoint.ts';
import type { PushLogsRequest as _iris_v1_PushLogsRequest, PushLogsRequest__Output as _iris_v1_PushLogsRequest__Output } from './iris/v1/PushLogsRequest.ts';
import type { PushLogsResponse as _iris_v1_PushLogsResponse, PushLogsResponse__Output as _iris_v1_PushLogsResponse__Output } from './iris/v1/PushLogsResponse.ts';
import type { ReconcileRequest as _iris_v1_ReconcileRequest, ReconcileRequest__Output as _iris_v1_ReconcileRequest__Output } from './iris/v1/ReconcileRequest.ts';
import type { ReconcileResponse as _iris_v1_ReconcileResponse, ReconcileResponse__Output as _iris_v1_ReconcileResponse__Output } from './iris/v1/ReconcileResponse.ts';
import type { RegisterWorkerRequest as _iris_v1_RegisterWorkerRequest, RegisterWorkerRequest__Output as _iris_v1_RegisterWorkerRequest__Output } from './iris/v1/RegisterWorkerRequest.ts';
import type { RegisterWorkerResponse as _iris_v1_RegisterWorkerResponse, RegisterWorkerResponse__Output as _iris_v1_RegisterWorkerResponse__Output } from './iris/v1/RegisterWorkerResponse.ts';
import type { Resources as _iris_v1_Resources, Resources__Output as _iris_v1_Resources__Output } from './iris/v1/Resources.ts';
import type { RunAttempt as _iris_v1_RunAttempt, RunAttempt__Output as _iris_v1_RunAttempt__Output } from './iris/v1/RunAttempt.ts';
import type { StopAttempt as _iris_v1_StopAttempt, StopAttempt__Output as _iris_v1_StopAttempt__Output } from './iris/v1/StopAttempt.ts';
import type { TaskStatus as _iris_v1_TaskStatus, TaskStatus__Output as _iris_v1_TaskStatus__Output } from './iris/v1/TaskStatus.ts';
import type { WatchAssignmentsRequest as _iris_v1_WatchAssignmentsRequest, WatchAssignmentsRequest__Output as _iris_v1_WatchAssignmentsRequest__Output } from './iris/v1/WatchAssignmentsRequest.ts';
import type { WorkerControlServiceClient as _iris_v1_WorkerControlServiceClient, WorkerControlServiceDefinition as _iris_v1_WorkerControlServiceDefinition } from './iris/v1/WorkerControlService.ts';
import type { WorkerHealth as _iris_v1_WorkerHealth, WorkerHealth__Output as _iris_v1_WorkerHealth__Output } from './iris/v1/WorkerHealth.ts';
import type { WorkerInfo as _iris_v1_WorkerInfo, WorkerInfo__Output as _iris_v1_WorkerInfo__Output } from './iris/v1/WorkerInfo.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  iris: {
    v1: {
      AssignmentNotice: MessageTypeDefinition<_iris_v1_AssignmentNotice, _iris_v1_AssignmentNotice__Output>
      AttemptObservation: MessageTypeDefinition<_iris_v1_AttemptObservation, _iris_v1_AttemptObservation__Output>
      AttemptStatus: MessageTypeDefinition<_iris_v1_AttemptStatus, _iris_v1_AttemptStatus__Output>
      BundleChunk: MessageTypeDefinition<_iris_v1_BundleChunk, _iris_v1_BundleChunk__Output>
      CommandEntrypoint: MessageTypeDefinition<_iris_v1_CommandEntrypoint, _iris_v1_CommandEntrypoint__Output>
      Constraint: MessageTypeDefinition<_iris_v1_Constraint, _iris_v1_Constraint__Output>
      DeregisterWorkerRequest: MessageTypeDefinition<_iris_v1_DeregisterWorkerRequest, _iris_v1_DeregisterWorkerRequest__Output>
      DeregisterWorkerResponse: MessageTypeDefinition<_iris_v1_DeregisterWorkerResponse, _iris_v1_DeregisterWorkerResponse__Output>
      Device: MessageTypeDefinition<_iris_v1_Device, _iris_v1_Device__Output>
      Endpoint: MessageTypeDefinition<_iris_v1_Endpoint, _iris_v1_Endpoint__Output>
      Entrypoint: MessageTypeDefinition<_iris_v1_Entrypoint, _iris_v1_Entrypoint__Output>
      FetchBundleRequest: MessageTypeDefinition<_iris_v1_FetchBundleRequest, _iris_v1_FetchBundleRequest__Output>
      JobSpec: MessageTypeDefinition<_iris_v1_JobSpec, _iris_v1_JobSpec__Output>
      JobStatus: MessageTypeDefinition<_iris_v1_JobStatus, _iris_v1_JobStatus__Output>
      LogEntry: MessageTypeDefinition<_iris_v1_LogEntry, _iris_v1_LogEntry__Output>
      LogLine: MessageTypeDefinition<_iris_v1_LogLine, _iris_v1_LogLine__Output>
      MetricPoint: MessageTypeDefinition<_iris_v1_MetricPoint, _iris_v1_MetricPoint__Output>
      ModuleEntrypoint: MessageTypeDefinition<_iris_v1_ModuleEntrypoint, _iris_v1_ModuleEntrypoint__Output>
      PushLogsRequest: MessageTypeDefinition<_iris_v1_PushLogsRequest, _iris_v1_PushLogsRequest__Output>
      PushLogsResponse: MessageTypeDefinition<_iris_v1_PushLogsResponse, _iris_v1_PushLogsResponse__Output>
      ReconcileRequest: MessageTypeDefinition<_iris_v1_ReconcileRequest, _iris_v1_ReconcileRequest__Output>
      ReconcileResponse: MessageTypeDefinition<_iris_v1_ReconcileResponse, _iris_v1_ReconcileResponse__Output>
      RegisterWorkerRequest: MessageTypeDefinition<_iris_v1_RegisterWorkerRequest, _iris_v1_RegisterWorkerRequest__Output>
      RegisterWorkerResponse: MessageTypeDefinition<_iris_v1_RegisterWorkerResponse, _iris_v1_RegisterWorkerResponse__Output>
      Resources: MessageTypeDefinition<_iris_v1_Resources, _iris_v1_Resources__Output>
      RunAttempt: MessageTypeDefinition<_iris_v1_RunAttempt, _iris_v1_RunAttempt__Output>
      StopAttempt: MessageTypeDefinition<_iris_v1_StopAttempt, _iris_v1_StopAttempt__Output>
      TaskStatus: MessageTypeDefinition<_iris_v1_TaskStatus, _iris_v1_TaskStatus__Output>
      WatchAssignmentsRequest: MessageTypeDefinition<_iris_v1_WatchAssignmentsRequest, _iris_v1_WatchAssignmentsRequest__Output>
      WorkerControlService: SubtypeConstructor<typeof grpc.Client, _iris_v1_WorkerControlServiceClient> & { service: _iris_v1_WorkerControlServiceDefinition }
      WorkerHealth: MessageTypeDefinition<_iris_v1_WorkerHealth, _iris_v1_WorkerHealth__Output>
      WorkerInfo: MessageTypeDefinition<_iris_v1_WorkerInfo, _iris_v1_WorkerInfo__Output>
    }
  }
}

