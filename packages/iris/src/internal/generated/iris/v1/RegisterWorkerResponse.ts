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
  /**
   * The worker's session (auth on): the bearer token for every later call of this worker
   * process, bound to worker_id and instance_id. "" = keep the credential just used (auth off,
   * or this registration was made with the session itself).
   */
  'sessionToken'?: (string);
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
  /**
   * The worker's session (auth on): the bearer token for every later call of this worker
   * process, bound to worker_id and instance_id. "" = keep the credential just used (auth off,
   * or this registration was made with the session itself).
   */
  'sessionToken': (string);
}
