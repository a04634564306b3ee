// Original file: proto/iris/v1/types.proto

import type { AttemptStatus as _iris_v1_AttemptStatus, AttemptStatus__Output as _iris_v1_AttemptStatus__Output } from '../../iris/v1/AttemptStatus.ts';

export interface TaskStatus {
  /**
   * "/user/job/<index>"
   */
  'taskId'?: (string);
  'index'?: (number);
  /**
   * PENDING | ASSIGNED | BUILDING | RUNNING | SUCCEEDED | FAILED | KILLED | WORKER_LOST |
   * PREEMPTED | UNSCHEDULABLE (never fits any registered worker, or none registered within the
   * scheduling timeout; the reason is in `error`)
   */
  'state'?: (string);
  /**
   * Number of the current (latest) attempt; 0 before the first.
   */
  'attempt'?: (number);
  'exitCode'?: (number);
  'failureKind'?: (string);
  /**
   * Why the scheduler could not place the task (PENDING only).
   */
  'pendingReason'?: (string);
  /**
   * Latest text from ReportTaskStatus.
   */
  'statusText'?: (string);
  'error'?: (string);
  'workerId'?: (string);
  'attempts'?: (_iris_v1_AttemptStatus)[];
  'failures'?: (number);
  'preemptions'?: (number);
  /**
   * The current attempt's result_json (SUCCEEDED only; "" = none).
   */
  'resultJson'?: (string);
  /**
   * The error code of the failure that ended the task as APP_ERROR; "" otherwise.
   */
  'errorCode'?: (string);
  '_exitCode'?: "exitCode";
}

export interface TaskStatus__Output {
  /**
   * "/user/job/<index>"
   */
  'taskId': (string);
  'index': (number);
  /**
   * PENDING | ASSIGNED | BUILDING | RUNNING | SUCCEEDED | FAILED | KILLED | WORKER_LOST |
   * PREEMPTED | UNSCHEDULABLE (never fits any registered worker, or none registered within the
   * scheduling timeout; the reason is in `error`)
   */
  'state': (string);
  /**
   * Number of the current (latest) attempt; 0 before the first.
   */
  'attempt': (number);
  'exitCode'?: (number);
  'failureKind': (string);
  /**
   * Why the scheduler could not place the task (PENDING only).
   */
  'pendingReason': (string);
  /**
   * Latest text from ReportTaskStatus.
   */
  'statusText': (string);
  'error': (string);
  'workerId': (string);
  'attempts': (_iris_v1_AttemptStatus__Output)[];
  'failures': (number);
  'preemptions': (number);
  /**
   * The current attempt's result_json (SUCCEEDED only; "" = none).
   */
  'resultJson': (string);
  /**
   * The error code of the failure that ended the task as APP_ERROR; "" otherwise.
   */
  'errorCode': (string);
  '_exitCode'?: "exitCode";
}
