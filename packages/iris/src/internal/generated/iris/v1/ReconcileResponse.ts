// Original file: proto/iris/v1/worker.proto

import type { RunAttempt as _iris_v1_RunAttempt, RunAttempt__Output as _iris_v1_RunAttempt__Output } from '../../iris/v1/RunAttempt.ts';
import type { StopAttempt as _iris_v1_StopAttempt, StopAttempt__Output as _iris_v1_StopAttempt__Output } from '../../iris/v1/StopAttempt.ts';
import type { Long } from '@grpc/proto-loader';

export interface ReconcileResponse {
  /**
   * Every attempt that should be running on this worker, each with its full spec.
   */
  'run'?: (_iris_v1_RunAttempt)[];
  /**
   * Attempts to end now.
   */
  'stop'?: (_iris_v1_StopAttempt)[];
  /**
   * For each observed attempt: how many of its log lines the controller has stored. A worker
   * that still holds lines from that position on (e.g. written to a PushLogs stream that broke
   * when the controller restarted) may send them again, with their `index`.
   */
  'logLinesReceived'?: ({[key: string]: number | string | Long});
  /**
   * The worker is draining (`iris worker drain`): nothing new is placed on it; once its attempts
   * have ended and been reported it deregisters and stops.
   */
  'draining'?: (boolean);
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
  /**
   * For each observed attempt: how many of its log lines the controller has stored. A worker
   * that still holds lines from that position on (e.g. written to a PushLogs stream that broke
   * when the controller restarted) may send them again, with their `index`.
   */
  'logLinesReceived': ({[key: string]: number});
  /**
   * The worker is draining (`iris worker drain`): nothing new is placed on it; once its attempts
   * have ended and been reported it deregisters and stops.
   */
  'draining': (boolean);
}
