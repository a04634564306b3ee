// Original file: proto/iris/v1/worker.proto


export interface PushLogsResponse {
}

export interface PushLogsResponse__Output {
}
