// Original file: proto/iris/v1/controller.proto


export interface GetClusterStatusResponse {
  /**
   * ClusterStatus as JSON text.
   */
  'statusJson'?: (string);
}

export interface GetClusterStatusResponse__Output {
  /**
   * ClusterStatus as JSON text.
   */
  'statusJson': (string);
}
