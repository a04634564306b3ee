// Original file: proto/iris/v1/worker.proto

import type { Resources as _iris_v1_Resources, Resources__Output as _iris_v1_Resources__Output } from '../../iris/v1/Resources.ts';

export interface RegisterWorkerRequest {
  /**
   * Chosen by the worker (unique per worker process or state directory); "" lets the
   * controller choose.
   */
  'workerId'?: (string);
  /**
   * Host tasks advertise (IRIS_ADVERTISE_HOST).
   */
  'host'?: (string);
  'attributes'?: ({[key: string]: string});
  'capacity'?: (_iris_v1_Resources | null);
}

export interface RegisterWorkerRequest__Output {
  /**
   * Chosen by the worker (unique per worker process or state directory); "" lets the
   * controller choose.
   */
  'workerId': (string);
  /**
   * Host tasks advertise (IRIS_ADVERTISE_HOST).
   */
  'host': (string);
  'attributes': ({[key: string]: string});
  'capacity': (_iris_v1_Resources__Output | null);
}
