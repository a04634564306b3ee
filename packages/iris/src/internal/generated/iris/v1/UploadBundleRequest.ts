// Original file: proto/iris/v1/controller.proto

import type { Long } from '@grpc/proto-loader';

export interface UploadBundleRequest {
  /**
   * First message: the id and total size; `data` empty. Then `data` only.
   */
  'bundleId'?: (string);
  'sizeBytes'?: (number | string | Long);
  'data'?: (Buffer | Uint8Array | string);
}

export interface UploadBundleRequest__Output {
  /**
   * First message: the id and total size; `data` empty. Then `data` only.
   */
  'bundleId': (string);
  'sizeBytes': (number);
  'data': (Buffer);
}
