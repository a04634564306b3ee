// Original file: proto/iris/v1/controller.proto

import type { Long } from '@grpc/proto-loader';

export interface BundleInfo {
  'bundleId'?: (string);
  'sizeBytes'?: (number | string | Long);
  /**
   * Whether this call stored it (false: the controller had it already).
   */
  'uploaded'?: (boolean);
}

export interface BundleInfo__Output {
  'bundleId': (string);
  'sizeBytes': (number);
  /**
   * Whether this call stored it (false: the controller had it already).
   */
  'uploaded': (boolean);
}
