// Original file: proto/iris/v1/types.proto

import type { Long } from '@grpc/proto-loader';

export interface MetricPoint {
  'step'?: (number | string);
  'timeMs'?: (number | string | Long);
  'metrics'?: ({[key: string]: number | string});
}

export interface MetricPoint__Output {
  'step': (number);
  'timeMs': (number);
  'metrics': ({[key: string]: number});
}
