// Original file: proto/iris/v1/controller.proto


export interface ListJobsRequest {
  /**
   * Jobs whose name is `prefix` or starts with `prefix` + "/"; "" lists all. Latest submission
   * of each name only.
   */
  'prefix'?: (string);
}

export interface ListJobsRequest__Output {
  /**
   * Jobs whose name is `prefix` or starts with `prefix` + "/"; "" lists all. Latest submission
   * of each name only.
   */
  'prefix': (string);
}
