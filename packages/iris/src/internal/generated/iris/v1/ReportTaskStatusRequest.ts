// Original file: proto/iris/v1/controller.proto


export interface ReportTaskStatusRequest {
  /**
   * "/user/job/<index>" and the attempt number (0 = the task's current attempt).
   */
  'taskId'?: (string);
  'attempt'?: (number);
  'statusText'?: (string);
  /**
   * Numbers to record; the key "step" (if present) is the point's step, else the previous
   * step + 1. An empty map only updates the status text.
   */
  'metrics'?: ({[key: string]: number | string});
}

export interface ReportTaskStatusRequest__Output {
  /**
   * "/user/job/<index>" and the attempt number (0 = the task's current attempt).
   */
  'taskId': (string);
  'attempt': (number);
  'statusText': (string);
  /**
   * Numbers to record; the key "step" (if present) is the point's step, else the previous
   * step + 1. An empty map only updates the status text.
   */
  'metrics': ({[key: string]: number});
}
