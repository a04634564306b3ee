// Original file: proto/iris/v1/worker.proto

import type { Long } from '@grpc/proto-loader';

export interface AssignmentNotice {
  /**
   * Increases with every change of the worker's desired set.
   */
  'generation'?: (number | string | Long);
}

export interface AssignmentNotice__Output {
  /**
   * Increases with every change of the worker's desired set.
   */
  'generation': (number);
}
