// Original file: proto/iris/v1/controller.proto


export interface GetTaskMetricsRequest {
  'taskId'?: (string);
  /**
   * 0 = the current attempt.
   */
  'attempt'?: (number);
}

export interface GetTaskMetricsRequest__Output {
  'taskId': (string);
  /**
   * 0 = the current attempt.
   */
  'attempt': (number);
}
