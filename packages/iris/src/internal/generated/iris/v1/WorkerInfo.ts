// Original file: proto/iris/v1/types.proto

import type { Resources as _iris_v1_Resources, Resources__Output as _iris_v1_Resources__Output } from '../../iris/v1/Resources.ts';
import type { Long } from '@grpc/proto-loader';

export interface WorkerInfo {
  'workerId'?: (string);
  'host'?: (string);
  'attributes'?: ({[key: string]: string});
  'capacity'?: (_iris_v1_Resources | null);
  'used'?: (_iris_v1_Resources | null);
  /**
   * ALIVE | DRAINING | LOST
   */
  'state'?: (string);
  'lastSeenMs'?: (number | string | Long);
  'runningAttempts'?: (number);
}

export interface WorkerInfo__Output {
  'workerId': (string);
  'host': (string);
  'attributes': ({[key: string]: string});
  'capacity': (_iris_v1_Resources__Output | null);
  'used': (_iris_v1_Resources__Output | null);
  /**
   * ALIVE | DRAINING | LOST
   */
  'state': (string);
  'lastSeenMs': (number);
  'runningAttempts': (number);
}
