// Original file: proto/iris/v1/controller.proto


export interface GetClusterStatusRequest {
}

export interface GetClusterStatusRequest__Output {
}
