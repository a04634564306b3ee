// Original file: proto/iris/v1/worker.proto

import type { Long } from '@grpc/proto-loader';

/**
 * What the worker sees of one of its attempts.
 */
export interface AttemptObservation {
  'attemptUid'?: (string);
  'taskId'?: (string);
  'attempt'?: (number);
  /**
   * BUILDING | RUNNING | SUCCEEDED | FAILED | KILLED
   */
  'state'?: (string);
  'exitCode'?: (number);
  /**
   * For FAILED/KILLED: APP_EXIT | APP_ERROR | SIGNAL | OOM | TIMEOUT | LAUNCH_FAILED | KILLED |
   * WORKER_LOST | BUILD_FAILED
   */
  'failureKind'?: (string);
  'error'?: (string);
  'pid'?: (number);
  'startedAtMs'?: (number | string | Long);
  'finishedAtMs'?: (number | string | Long);
  /**
   * Log lines of this attempt the worker has written to PushLogs so far.
   */
  'logLines'?: (number | string | Long);
  /**
   * For SUCCEEDED: the JSON text of a module entrypoint's return value ("" = none).
   */
  'resultJson'?: (string);
  /**
   * For APP_ERROR: the application's error code.
   */
  'errorCode'?: (string);
  '_exitCode'?: "exitCode";
}

/**
 * What the worker sees of one of its attempts.
 */
export interface AttemptObservation__Output {
  'attemptUid': (string);
  'taskId': (string);
  'attempt': (number);
  /**
   * BUILDING | RUNNING | SUCCEEDED | FAILED | KILLED
   */
  'state': (string);
  'exitCode'?: (number);
  /**
   * For FAILED/KILLED: APP_EXIT | APP_ERROR | SIGNAL | OOM | TIMEOUT | LAUNCH_FAILED | KILLED |
   * WORKER_LOST | BUILD_FAILED
   */
  'failureKind': (string);
  'error': (string);
  'pid': (number);
  'startedAtMs': (number);
  'finishedAtMs': (number);
  /**
   * Log lines of this attempt the worker has written to PushLogs so far.
   */
  'logLines': (number);
  /**
   * For SUCCEEDED: the JSON text of a module entrypoint's return value ("" = none).
   */
  'resultJson': (string);
  /**
   * For APP_ERROR: the application's error code.
   */
  'errorCode': (string);
  '_exitCode'?: "exitCode";
}
