// Original file: proto/iris/v1/worker.proto

import type { Long } from '@grpc/proto-loader';

export interface RegisterWorkerResponse {
  'workerId'?: (string);
  /**
   * How often the worker should reconcile without a notice (liveness + repair).
   */
  'reconcileIntervalMs'?: (number | string | Long);
  /**
   * A worker silent for this long is declared lost.
   */
  'workerTimeoutMs'?: (number | string | Long);
}

export interface RegisterWorkerResponse__Output {
  'workerId': (string);
  /**
   * How often the worker should reconcile without a notice (liveness + repair).
   */
  'reconcileIntervalMs': (number);
  /**
   * A worker silent for this long is declared lost.
   */
  'workerTimeoutMs': (number);
}
