// Original file: proto/iris/v1/controller.proto

import type { JobSpec as _iris_v1_JobSpec, JobSpec__Output as _iris_v1_JobSpec__Output } from '../../iris/v1/JobSpec.ts';

export interface LaunchJobRequest {
  'spec'?: (_iris_v1_JobSpec | null);
}

export interface LaunchJobRequest__Output {
  'spec': (_iris_v1_JobSpec__Output | null);
}
