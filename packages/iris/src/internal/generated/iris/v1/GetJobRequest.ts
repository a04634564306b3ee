// Original file: proto/iris/v1/controller.proto


export interface GetJobRequest {
  'name'?: (string);
  /**
   * A specific submission of that name; "" means the latest.
   */
  'instanceId'?: (string);
  /**
   * Tasks come in pages (GetJob, WatchJob, ListTasks): at most task_page_size of them (0: 1,000;
   * at most 10,000), from task_page_token (JobStatus.next_task_page_token; "" = the first page).
   */
  'taskPageSize'?: (number);
  'taskPageToken'?: (string);
}

export interface GetJobRequest__Output {
  'name': (string);
  /**
   * A specific submission of that name; "" means the latest.
   */
  'instanceId': (string);
  /**
   * Tasks come in pages (GetJob, WatchJob, ListTasks): at most task_page_size of them (0: 1,000;
   * at most 10,000), from task_page_token (JobStatus.next_task_page_token; "" = the first page).
   */
  'taskPageSize': (number);
  'taskPageToken': (string);
}
