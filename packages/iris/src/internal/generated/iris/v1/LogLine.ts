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
  /**
   * 0-based position of the line in its attempt's output. When set, the controller drops a line
   * it already stored (index < lines received), so resending is safe.
   */
  'index'?: (number | string | Long);
  '_index'?: "index";
}

/**
 * stream: "stdout" | "stderr"
 */
export interface LogLine__Output {
  'attemptUid': (string);
  'stream': (string);
  'line': (string);
  'timeMs': (number);
  /**
   * 0-based position of the line in its attempt's output. When set, the controller drops a line
   * it already stored (index < lines received), so resending is safe.
   */
  'index'?: (number);
  '_index'?: "index";
}
