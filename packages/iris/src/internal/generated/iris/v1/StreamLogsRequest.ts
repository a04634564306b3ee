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
   * With filter_task, only the lines of task `task_index`; otherwise every task's.
   */
  'taskIndex'?: (number);
  'filterTask'?: (boolean);
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
   * With filter_task, only the lines of task `task_index`; otherwise every task's.
   */
  'taskIndex': (number);
  'filterTask': (boolean);
}
