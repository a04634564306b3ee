// Original file: proto/iris/v1/controller.proto


export interface UnregisterEndpointResponse {
}

export interface UnregisterEndpointResponse__Output {
}
