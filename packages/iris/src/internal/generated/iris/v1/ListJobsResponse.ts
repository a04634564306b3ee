// Original file: proto/iris/v1/controller.proto

import type { JobStatus as _iris_v1_JobStatus, JobStatus__Output as _iris_v1_JobStatus__Output } from '../../iris/v1/JobStatus.ts';

export interface ListJobsResponse {
  'jobs'?: (_iris_v1_JobStatus)[];
  /**
   * "" on the last page.
   */
  'nextPageToken'?: (string);
}

export interface ListJobsResponse__Output {
  'jobs': (_iris_v1_JobStatus__Output)[];
  /**
   * "" on the last page.
   */
  'nextPageToken': (string);
}
