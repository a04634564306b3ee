// Original file: proto/iris/v1/controller.proto


export interface GetJobRequest {
  'name'?: (string);
  /**
   * A specific submission of that name; "" means the latest.
   */
  'instanceId'?: (string);
}

export interface GetJobRequest__Output {
  'name': (string);
  /**
   * A specific submission of that name; "" means the latest.
   */
  'instanceId': (string);
}
