// Original file: proto/iris/v1/controller.proto

import type { TaskStatus as _iris_v1_TaskStatus, TaskStatus__Output as _iris_v1_TaskStatus__Output } from '../../iris/v1/TaskStatus.ts';

export interface ListTasksResponse {
  'tasks'?: (_iris_v1_TaskStatus)[];
  /**
   * "" on the last page (see GetJobRequest.task_page_token).
   */
  'nextPageToken'?: (string);
}

export interface ListTasksResponse__Output {
  'tasks': (_iris_v1_TaskStatus__Output)[];
  /**
   * "" on the last page (see GetJobRequest.task_page_token).
   */
  'nextPageToken': (string);
}
