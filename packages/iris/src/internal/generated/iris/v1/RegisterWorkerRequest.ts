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
  /**
   * A random nonce of this worker process, fixed for its lifetime: the session minted at
   * registration is bound to it, and registering again with that session is refused from any
   * other instance.
   */
  'instanceId'?: (string);
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
  /**
   * A random nonce of this worker process, fixed for its lifetime: the session minted at
   * registration is bound to it, and registering again with that session is refused from any
   * other instance.
   */
  'instanceId': (string);
}
