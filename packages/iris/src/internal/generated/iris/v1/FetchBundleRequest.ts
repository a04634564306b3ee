// Original file: proto/iris/v1/worker.proto


export interface FetchBundleRequest {
  'bundleId'?: (string);
}

export interface FetchBundleRequest__Output {
  'bundleId': (string);
}
