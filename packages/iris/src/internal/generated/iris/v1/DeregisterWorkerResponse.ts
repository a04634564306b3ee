// Original file: proto/iris/v1/worker.proto


export interface DeregisterWorkerResponse {
}

export interface DeregisterWorkerResponse__Output {
}
