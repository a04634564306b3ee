// Original file: proto/iris/v1/controller.proto

import type { MetricPoint as _iris_v1_MetricPoint, MetricPoint__Output as _iris_v1_MetricPoint__Output } from '../../iris/v1/MetricPoint.ts';

export interface GetTaskMetricsResponse {
  'statusText'?: (string);
  'points'?: (_iris_v1_MetricPoint)[];
  'attempt'?: (number);
}

export interface GetTaskMetricsResponse__Output {
  'statusText': (string);
  'points': (_iris_v1_MetricPoint__Output)[];
  'attempt': (number);
}
