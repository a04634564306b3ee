// Original file: proto/iris/v1/worker.proto


export interface DeregisterWorkerRequest {
  'workerId'?: (string);
}

export interface DeregisterWorkerRequest__Output {
  'workerId': (string);
}
