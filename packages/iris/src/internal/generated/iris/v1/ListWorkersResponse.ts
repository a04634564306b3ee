// Original file: proto/iris/v1/controller.proto

import type { WorkerInfo as _iris_v1_WorkerInfo, WorkerInfo__Output as _iris_v1_WorkerInfo__Output } from '../../iris/v1/WorkerInfo.ts';

export interface ListWorkersResponse {
  'workers'?: (_iris_v1_WorkerInfo)[];
}

export interface ListWorkersResponse__Output {
  'workers': (_iris_v1_WorkerInfo__Output)[];
}
