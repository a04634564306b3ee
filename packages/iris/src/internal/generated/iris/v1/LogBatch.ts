// Original file: proto/iris/v1/controller.proto

import type { LogEntry as _iris_v1_LogEntry, LogEntry__Output as _iris_v1_LogEntry__Output } from '../../iris/v1/LogEntry.ts';

export interface LogBatch {
  'entries'?: (_iris_v1_LogEntry)[];
}

export interface LogBatch__Output {
  'entries': (_iris_v1_LogEntry__Output)[];
}
