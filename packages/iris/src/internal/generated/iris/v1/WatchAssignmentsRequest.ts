// Original file: proto/iris/v1/worker.proto


export interface WatchAssignmentsRequest {
  'workerId'?: (string);
}

export interface WatchAssignmentsRequest__Output {
  'workerId': (string);
}
