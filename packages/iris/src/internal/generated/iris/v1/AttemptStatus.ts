// Original file: proto/iris/v1/types.proto

import type { Long } from '@grpc/proto-loader';

/**
 * One attempt of a task, as the controller records it.
 */
export interface AttemptStatus {
  /**
   * 1-based attempt number; the attempt's id is "<task id>:<attempt>".
   */
  'attempt'?: (number);
  /**
   * Unique id of this attempt, the key of the reconcile protocol.
   */
  'attemptUid'?: (string);
  'workerId'?: (string);
  /**
   * ASSIGNED | BUILDING | RUNNING | SUCCEEDED | FAILED | KILLED | WORKER_LOST | PREEMPTED
   */
  'state'?: (string);
  'exitCode'?: (number);
  /**
   * "" | APP_EXIT | APP_ERROR | SIGNAL | OOM | TIMEOUT | WORKER_LOST | LAUNCH_FAILED | PEER_FAILED |
   * KILLED | BUILD_FAILED (the bundle could not be fetched, unpacked or installed) | PREEMPTED
   * (moved off a draining worker)
   */
  'failureKind'?: (string);
  'error'?: (string);
  'assignedAtMs'?: (number | string | Long);
  'startedAtMs'?: (number | string | Long);
  'finishedAtMs'?: (number | string | Long);
  /**
   * JSON text of a module entrypoint's return value (SUCCEEDED only; "" = none). At most
   * MAX_TASK_RESULT_BYTES (1 MiB) of UTF-8.
   */
  'resultJson'?: (string);
  /**
   * The application's error code of an APP_ERROR failure (e.g. "RESULT_TOO_LARGE"); "" otherwise.
   */
  'errorCode'?: (string);
  '_exitCode'?: "exitCode";
}

/**
 * One attempt of a task, as the controller records it.
 */
export interface AttemptStatus__Output {
  /**
   * 1-based attempt number; the attempt's id is "<task id>:<attempt>".
   */
  'attempt': (number);
  /**
   * Unique id of this attempt, the key of the reconcile protocol.
   */
  'attemptUid': (string);
  'workerId': (string);
  /**
   * ASSIGNED | BUILDING | RUNNING | SUCCEEDED | FAILED | KILLED | WORKER_LOST | PREEMPTED
   */
  'state': (string);
  'exitCode'?: (number);
  /**
   * "" | APP_EXIT | APP_ERROR | SIGNAL | OOM | TIMEOUT | WORKER_LOST | LAUNCH_FAILED | PEER_FAILED |
   * KILLED | BUILD_FAILED (the bundle could not be fetched, unpacked or installed) | PREEMPTED
   * (moved off a draining worker)
   */
  'failureKind': (string);
  'error': (string);
  'assignedAtMs': (number);
  'startedAtMs': (number);
  'finishedAtMs': (number);
  /**
   * JSON text of a module entrypoint's return value (SUCCEEDED only; "" = none). At most
   * MAX_TASK_RESULT_BYTES (1 MiB) of UTF-8.
   */
  'resultJson': (string);
  /**
   * The application's error code of an APP_ERROR failure (e.g. "RESULT_TOO_LARGE"); "" otherwise.
   */
  'errorCode': (string);
  '_exitCode'?: "exitCode";
}
