// Original file: proto/iris/v1/controller.proto


export interface ListEndpointsRequest {
  'prefix'?: (string);
  'scopeJob'?: (string);
}

export interface ListEndpointsRequest__Output {
  'prefix': (string);
  'scopeJob': (string);
}
