// Original file: proto/iris/v1/controller.proto


export interface LaunchJobResponse {
  'name'?: (string);
  'instanceId'?: (string);
}

export interface LaunchJobResponse__Output {
  'name': (string);
  'instanceId': (string);
}
