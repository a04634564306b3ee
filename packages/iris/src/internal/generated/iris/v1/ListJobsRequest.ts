// Original file: proto/iris/v1/controller.proto


export interface ListJobsRequest {
  /**
   * Jobs whose name is `prefix` or starts with `prefix` + "/"; "" lists all. Latest submission
   * of each name only.
   */
  'prefix'?: (string);
  /**
   * At most page_size jobs (0: 100; at most 1,000), oldest submission first, from page_token
   * (ListJobsResponse.next_page_token; "" = the first page). Each job is a summary: its tasks are
   * counted by state in JobStatus.task_counts, `tasks` is empty (GetJob pages through them).
   */
  'pageSize'?: (number);
  'pageToken'?: (string);
}

export interface ListJobsRequest__Output {
  /**
   * Jobs whose name is `prefix` or starts with `prefix` + "/"; "" lists all. Latest submission
   * of each name only.
   */
  'prefix': (string);
  /**
   * At most page_size jobs (0: 100; at most 1,000), oldest submission first, from page_token
   * (ListJobsResponse.next_page_token; "" = the first page). Each job is a summary: its tasks are
   * counted by state in JobStatus.task_counts, `tasks` is empty (GetJob pages through them).
   */
  'pageSize': (number);
  'pageToken': (string);
}
