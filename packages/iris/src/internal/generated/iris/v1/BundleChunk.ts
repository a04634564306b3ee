// Original file: proto/iris/v1/worker.proto

import type { Long } from '@grpc/proto-loader';

export interface BundleChunk {
  'data'?: (Buffer | Uint8Array | string);
  /**
   * Total size of the bundle (set on every chunk).
   */
  'sizeBytes'?: (number | string | Long);
}

export interface BundleChunk__Output {
  'data': (Buffer);
  /**
   * Total size of the bundle (set on every chunk).
   */
  'sizeBytes': (number);
}
