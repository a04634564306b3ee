// Original file: proto/iris/v1/controller.proto


export interface TerminateJobRequest {
  'name'?: (string);
}

export interface TerminateJobRequest__Output {
  'name': (string);
}
