// Original file: proto/iris/v1/worker.proto

import type { AttemptObservation as _iris_v1_AttemptObservation, AttemptObservation__Output as _iris_v1_AttemptObservation__Output } from '../../iris/v1/AttemptObservation.ts';
import type { WorkerHealth as _iris_v1_WorkerHealth, WorkerHealth__Output as _iris_v1_WorkerHealth__Output } from '../../iris/v1/WorkerHealth.ts';

export interface ReconcileRequest {
  'workerId'?: (string);
  'observed'?: (_iris_v1_AttemptObservation)[];
  'health'?: (_iris_v1_WorkerHealth | null);
}

export interface ReconcileRequest__Output {
  'workerId': (string);
  'observed': (_iris_v1_AttemptObservation__Output)[];
  'health': (_iris_v1_WorkerHealth__Output | null);
}
