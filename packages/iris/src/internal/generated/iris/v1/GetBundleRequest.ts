// Original file: proto/iris/v1/controller.proto


export interface GetBundleRequest {
  /**
   * "sha256:<64 hex digits>"
   */
  'bundleId'?: (string);
}

export interface GetBundleRequest__Output {
  /**
   * "sha256:<64 hex digits>"
   */
  'bundleId': (string);
}
