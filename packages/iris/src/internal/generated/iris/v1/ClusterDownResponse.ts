// Original file: proto/iris/v1/controller.proto


export interface ClusterDownResponse {
  /**
   * Workers stopped.
   */
  'stopped'?: (number);
}

export interface ClusterDownResponse__Output {
  /**
   * Workers stopped.
   */
  'stopped': (number);
}
