// Original file: proto/iris/v1/controller.proto


export interface ClusterDownRequest {
}

export interface ClusterDownRequest__Output {
}
