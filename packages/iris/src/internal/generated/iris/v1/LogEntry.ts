// Original file: proto/iris/v1/types.proto

import type { Long } from '@grpc/proto-loader';

/**
 * stream: "stdout" | "stderr"
 */
export interface LogEntry {
  'taskIndex'?: (number);
  'attempt'?: (number);
  'stream'?: (string);
  'line'?: (string);
  'timeMs'?: (number | string | Long);
  /**
   * Position in the job's log, increasing; resume a stream after it with StreamLogsRequest.after_seq.
   */
  'seq'?: (number | string | Long);
  'taskId'?: (string);
}

/**
 * stream: "stdout" | "stderr"
 */
export interface LogEntry__Output {
  'taskIndex': (number);
  'attempt': (number);
  'stream': (string);
  'line': (string);
  'timeMs': (number);
  /**
   * Position in the job's log, increasing; resume a stream after it with StreamLogsRequest.after_seq.
   */
  'seq': (number);
  'taskId': (string);
}
