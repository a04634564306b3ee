// Original file: proto/iris/v1/controller.proto

import type { Long } from '@grpc/proto-loader';

export interface StreamLogsRequest {
  'name'?: (string);
  'instanceId'?: (string);
  'follow'?: (boolean);
  /**
   * Only entries with seq > after_seq.
   */
  'afterSeq'?: (number | string | Long);
  /**
   * Only this task index; -1 (or unset with all_tasks) for every task.
   */
  'taskIndex'?: (number);
  'allTasks'?: (boolean);
}

export interface StreamLogsRequest__Output {
  'name': (string);
  'instanceId': (string);
  'follow': (boolean);
  /**
   * Only entries with seq > after_seq.
   */
  'afterSeq': (number);
  /**
   * Only this task index; -1 (or unset with all_tasks) for every task.
   */
  'taskIndex': (number);
  'allTasks': (boolean);
}
