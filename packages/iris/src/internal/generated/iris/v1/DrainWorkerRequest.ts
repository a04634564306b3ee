// Original file: proto/iris/v1/controller.proto


export interface DrainWorkerRequest {
  'workerId'?: (string);
}

export interface DrainWorkerRequest__Output {
  'workerId': (string);
}
