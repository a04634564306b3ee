// Original file: proto/iris/v1/worker.proto

import type { RunAttempt as _iris_v1_RunAttempt, RunAttempt__Output as _iris_v1_RunAttempt__Output } from '../../iris/v1/RunAttempt.ts';
import type { StopAttempt as _iris_v1_StopAttempt, StopAttempt__Output as _iris_v1_StopAttempt__Output } from '../../iris/v1/StopAttempt.ts';

export interface ReconcileResponse {
  /**
   * Every attempt that should be running on this worker, each with its full spec.
   */
  'run'?: (_iris_v1_RunAttempt)[];
  /**
   * Attempts to end now.
   */
  'stop'?: (_iris_v1_StopAttempt)[];
}

export interface ReconcileResponse__Output {
  /**
   * Every attempt that should be running on this worker, each with its full spec.
   */
  'run': (_iris_v1_RunAttempt__Output)[];
  /**
   * Attempts to end now.
   */
  'stop': (_iris_v1_StopAttempt__Output)[];
}
