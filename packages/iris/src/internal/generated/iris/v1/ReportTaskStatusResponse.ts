// Original file: proto/iris/v1/controller.proto


export interface ReportTaskStatusResponse {
}

export interface ReportTaskStatusResponse__Output {
}
