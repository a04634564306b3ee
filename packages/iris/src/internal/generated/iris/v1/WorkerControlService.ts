// Original file: proto/iris/v1/worker.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AssignmentNotice as _iris_v1_AssignmentNotice, AssignmentNotice__Output as _iris_v1_AssignmentNotice__Output } from '../../iris/v1/AssignmentNotice.ts';
import type { BundleChunk as _iris_v1_BundleChunk, BundleChunk__Output as _iris_v1_BundleChunk__Output } from '../../iris/v1/BundleChunk.ts';
import type { DeregisterWorkerRequest as _iris_v1_DeregisterWorkerRequest, DeregisterWorkerRequest__Output as _iris_v1_DeregisterWorkerRequest__Output } from '../../iris/v1/DeregisterWorkerRequest.ts';
import type { DeregisterWorkerResponse as _iris_v1_DeregisterWorkerResponse, DeregisterWorkerResponse__Output as _iris_v1_DeregisterWorkerResponse__Output } from '../../iris/v1/DeregisterWorkerResponse.ts';
import type { FetchBundleRequest as _iris_v1_FetchBundleRequest, FetchBundleRequest__Output as _iris_v1_FetchBundleRequest__Output } from '../../iris/v1/FetchBundleRequest.ts';
import type { PushLogsRequest as _iris_v1_PushLogsRequest, PushLogsRequest__Output as _iris_v1_PushLogsRequest__Output } from '../../iris/v1/PushLogsRequest.ts';
import type { PushLogsResponse as _iris_v1_PushLogsResponse, PushLogsResponse__Output as _iris_v1_PushLogsResponse__Output } from '../../iris/v1/PushLogsResponse.ts';
import type { ReconcileRequest as _iris_v1_ReconcileRequest, ReconcileRequest__Output as _iris_v1_ReconcileRequest__Output } from '../../iris/v1/ReconcileRequest.ts';
import type { ReconcileResponse as _iris_v1_ReconcileResponse, ReconcileResponse__Output as _iris_v1_ReconcileResponse__Output } from '../../iris/v1/ReconcileResponse.ts';
import type { RegisterWorkerRequest as _iris_v1_RegisterWorkerRequest, RegisterWorkerRequest__Output as _iris_v1_RegisterWorkerRequest__Output } from '../../iris/v1/RegisterWorkerRequest.ts';
import type { RegisterWorkerResponse as _iris_v1_RegisterWorkerResponse, RegisterWorkerResponse__Output as _iris_v1_RegisterWorkerResponse__Output } from '../../iris/v1/RegisterWorkerResponse.ts';
import type { WatchAssignmentsRequest as _iris_v1_WatchAssignmentsRequest, WatchAssignmentsRequest__Output as _iris_v1_WatchAssignmentsRequest__Output } from '../../iris/v1/WatchAssignmentsRequest.ts';

export interface WorkerControlServiceClient extends grpc.Client {
  /**
   * A worker that stops (or has finished draining) leaves the cluster: its row is removed and any
   * attempt still recorded on it ends WORKER_LOST. Idempotent.
   */
  DeregisterWorker(argument: _iris_v1_DeregisterWorkerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_DeregisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  DeregisterWorker(argument: _iris_v1_DeregisterWorkerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_DeregisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  DeregisterWorker(argument: _iris_v1_DeregisterWorkerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_DeregisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  DeregisterWorker(argument: _iris_v1_DeregisterWorkerRequest, callback: grpc.requestCallback<_iris_v1_DeregisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  /**
   * A worker that stops (or has finished draining) leaves the cluster: its row is removed and any
   * attempt still recorded on it ends WORKER_LOST. Idempotent.
   */
  deregisterWorker(argument: _iris_v1_DeregisterWorkerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_DeregisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  deregisterWorker(argument: _iris_v1_DeregisterWorkerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_DeregisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  deregisterWorker(argument: _iris_v1_DeregisterWorkerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_DeregisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  deregisterWorker(argument: _iris_v1_DeregisterWorkerRequest, callback: grpc.requestCallback<_iris_v1_DeregisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The bytes of a stored code bundle, in chunks of at most 1 MiB. NOT_FOUND when the controller
   * does not hold it.
   */
  FetchBundle(argument: _iris_v1_FetchBundleRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_BundleChunk__Output>;
  FetchBundle(argument: _iris_v1_FetchBundleRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_BundleChunk__Output>;
  /**
   * The bytes of a stored code bundle, in chunks of at most 1 MiB. NOT_FOUND when the controller
   * does not hold it.
   */
  fetchBundle(argument: _iris_v1_FetchBundleRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_BundleChunk__Output>;
  fetchBundle(argument: _iris_v1_FetchBundleRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_BundleChunk__Output>;
  
  /**
   * Log lines of the worker's attempts, in order per attempt.
   */
  PushLogs(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_PushLogsResponse__Output>): grpc.ClientWritableStream<_iris_v1_PushLogsRequest>;
  PushLogs(metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_PushLogsResponse__Output>): grpc.ClientWritableStream<_iris_v1_PushLogsRequest>;
  PushLogs(options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_PushLogsResponse__Output>): grpc.ClientWritableStream<_iris_v1_PushLogsRequest>;
  PushLogs(callback: grpc.requestCallback<_iris_v1_PushLogsResponse__Output>): grpc.ClientWritableStream<_iris_v1_PushLogsRequest>;
  /**
   * Log lines of the worker's attempts, in order per attempt.
   */
  pushLogs(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_PushLogsResponse__Output>): grpc.ClientWritableStream<_iris_v1_PushLogsRequest>;
  pushLogs(metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_PushLogsResponse__Output>): grpc.ClientWritableStream<_iris_v1_PushLogsRequest>;
  pushLogs(options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_PushLogsResponse__Output>): grpc.ClientWritableStream<_iris_v1_PushLogsRequest>;
  pushLogs(callback: grpc.requestCallback<_iris_v1_PushLogsResponse__Output>): grpc.ClientWritableStream<_iris_v1_PushLogsRequest>;
  
  /**
   * Full-state exchange: the worker's observed attempts + health up, the complete desired set
   * down. NOT_FOUND when the controller does not know the worker (register again).
   */
  Reconcile(argument: _iris_v1_ReconcileRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  Reconcile(argument: _iris_v1_ReconcileRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  Reconcile(argument: _iris_v1_ReconcileRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  Reconcile(argument: _iris_v1_ReconcileRequest, callback: grpc.requestCallback<_iris_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Full-state exchange: the worker's observed attempts + health up, the complete desired set
   * down. NOT_FOUND when the controller does not know the worker (register again).
   */
  reconcile(argument: _iris_v1_ReconcileRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  reconcile(argument: _iris_v1_ReconcileRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  reconcile(argument: _iris_v1_ReconcileRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  reconcile(argument: _iris_v1_ReconcileRequest, callback: grpc.requestCallback<_iris_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Announce a worker (again). Idempotent per worker_id; a worker that was declared lost
   * becomes alive again (its old attempts stay lost and come back as stop intents).
   */
  RegisterWorker(argument: _iris_v1_RegisterWorkerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_RegisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  RegisterWorker(argument: _iris_v1_RegisterWorkerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_RegisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  RegisterWorker(argument: _iris_v1_RegisterWorkerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_RegisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  RegisterWorker(argument: _iris_v1_RegisterWorkerRequest, callback: grpc.requestCallback<_iris_v1_RegisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Announce a worker (again). Idempotent per worker_id; a worker that was declared lost
   * becomes alive again (its old attempts stay lost and come back as stop intents).
   */
  registerWorker(argument: _iris_v1_RegisterWorkerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_RegisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  registerWorker(argument: _iris_v1_RegisterWorkerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_iris_v1_RegisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  registerWorker(argument: _iris_v1_RegisterWorkerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_iris_v1_RegisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  registerWorker(argument: _iris_v1_RegisterWorkerRequest, callback: grpc.requestCallback<_iris_v1_RegisterWorkerResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Pushes a notice whenever this worker's desired set changes; the worker reconciles at once.
   * NOT_FOUND for an unknown worker.
   */
  WatchAssignments(argument: _iris_v1_WatchAssignmentsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_AssignmentNotice__Output>;
  WatchAssignments(argument: _iris_v1_WatchAssignmentsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_AssignmentNotice__Output>;
  /**
   * Pushes a notice whenever this worker's desired set changes; the worker reconciles at once.
   * NOT_FOUND for an unknown worker.
   */
  watchAssignments(argument: _iris_v1_WatchAssignmentsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_AssignmentNotice__Output>;
  watchAssignments(argument: _iris_v1_WatchAssignmentsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_iris_v1_AssignmentNotice__Output>;
  
}

export interface WorkerControlServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * A worker that stops (or has finished draining) leaves the cluster: its row is removed and any
   * attempt still recorded on it ends WORKER_LOST. Idempotent.
   */
  DeregisterWorker: grpc.handleUnaryCall<_iris_v1_DeregisterWorkerRequest__Output, _iris_v1_DeregisterWorkerResponse>;
  
  /**
   * The bytes of a stored code bundle, in chunks of at most 1 MiB. NOT_FOUND when the controller
   * does not hold it.
   */
  FetchBundle: grpc.handleServerStreamingCall<_iris_v1_FetchBundleRequest__Output, _iris_v1_BundleChunk>;
  
  /**
   * Log lines of the worker's attempts, in order per attempt.
   */
  PushLogs: grpc.handleClientStreamingCall<_iris_v1_PushLogsRequest__Output, _iris_v1_PushLogsResponse>;
  
  /**
   * Full-state exchange: the worker's observed attempts + health up, the complete desired set
   * down. NOT_FOUND when the controller does not know the worker (register again).
   */
  Reconcile: grpc.handleUnaryCall<_iris_v1_ReconcileRequest__Output, _iris_v1_ReconcileResponse>;
  
  /**
   * Announce a worker (again). Idempotent per worker_id; a worker that was declared lost
   * becomes alive again (its old attempts stay lost and come back as stop intents).
   */
  RegisterWorker: grpc.handleUnaryCall<_iris_v1_RegisterWorkerRequest__Output, _iris_v1_RegisterWorkerResponse>;
  
  /**
   * Pushes a notice whenever this worker's desired set changes; the worker reconciles at once.
   * NOT_FOUND for an unknown worker.
   */
  WatchAssignments: grpc.handleServerStreamingCall<_iris_v1_WatchAssignmentsRequest__Output, _iris_v1_AssignmentNotice>;
  
}

export interface WorkerControlServiceDefinition extends grpc.ServiceDefinition {
  DeregisterWorker: MethodDefinition<_iris_v1_DeregisterWorkerRequest, _iris_v1_DeregisterWorkerResponse, _iris_v1_DeregisterWorkerRequest__Output, _iris_v1_DeregisterWorkerResponse__Output>
  FetchBundle: MethodDefinition<_iris_v1_FetchBundleRequest, _iris_v1_BundleChunk, _iris_v1_FetchBundleRequest__Output, _iris_v1_BundleChunk__Output>
  PushLogs: MethodDefinition<_iris_v1_PushLogsRequest, _iris_v1_PushLogsResponse, _iris_v1_PushLogsRequest__Output, _iris_v1_PushLogsResponse__Output>
  Reconcile: MethodDefinition<_iris_v1_ReconcileRequest, _iris_v1_ReconcileResponse, _iris_v1_ReconcileRequest__Output, _iris_v1_ReconcileResponse__Output>
  RegisterWorker: MethodDefinition<_iris_v1_RegisterWorkerRequest, _iris_v1_RegisterWorkerResponse, _iris_v1_RegisterWorkerRequest__Output, _iris_v1_RegisterWorkerResponse__Output>
  WatchAssignments: MethodDefinition<_iris_v1_WatchAssignmentsRequest, _iris_v1_AssignmentNotice, _iris_v1_WatchAssignmentsRequest__Output, _iris_v1_AssignmentNotice__Output>
}
