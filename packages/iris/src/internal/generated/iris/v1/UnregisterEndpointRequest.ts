// Original file: proto/iris/v1/controller.proto


export interface UnregisterEndpointRequest {
  'endpointId'?: (string);
}

export interface UnregisterEndpointRequest__Output {
  'endpointId': (string);
}
