// Original file: proto/iris/v1/controller.proto


export interface ListWorkersRequest {
}

export interface ListWorkersRequest__Output {
}
