// Original file: proto/iris/v1/worker.proto

import type { LogLine as _iris_v1_LogLine, LogLine__Output as _iris_v1_LogLine__Output } from '../../iris/v1/LogLine.ts';

export interface PushLogsRequest {
  'lines'?: (_iris_v1_LogLine)[];
}

export interface PushLogsRequest__Output {
  'lines': (_iris_v1_LogLine__Output)[];
}
