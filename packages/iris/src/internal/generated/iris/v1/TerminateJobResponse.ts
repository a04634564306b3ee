// Original file: proto/iris/v1/controller.proto


export interface TerminateJobResponse {
}

export interface TerminateJobResponse__Output {
}
