// Original file: proto/iris/v1/worker.proto

import type { Long } from '@grpc/proto-loader';

/**
 * stream: "stdout" | "stderr"
 */
export interface LogLine {
  'attemptUid'?: (string);
  'stream'?: (string);
  'line'?: (string);
  'timeMs'?: (number | string | Long);
}

/**
 * stream: "stdout" | "stderr"
 */
export interface LogLine__Output {
  'attemptUid': (string);
  'stream': (string);
  'line': (string);
  'timeMs': (number);
}
