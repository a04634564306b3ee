// Original file: proto/iris/v1/types.proto

import type { TaskStatus as _iris_v1_TaskStatus, TaskStatus__Output as _iris_v1_TaskStatus__Output } from '../../iris/v1/TaskStatus.ts';
import type { JobSpec as _iris_v1_JobSpec, JobSpec__Output as _iris_v1_JobSpec__Output } from '../../iris/v1/JobSpec.ts';
import type { Long } from '@grpc/proto-loader';

export interface JobStatus {
  'name'?: (string);
  /**
   * Immutable id of this submission (a finished name can be submitted again).
   */
  'instanceId'?: (string);
  /**
   * PENDING | RUNNING | SUCCEEDED | FAILED | KILLED | UNSCHEDULABLE
   */
  'state'?: (string);
  'error'?: (string);
  'tasks'?: (_iris_v1_TaskStatus)[];
  'submittedAtMs'?: (number | string | Long);
  'finishedAtMs'?: (number | string | Long);
  'spec'?: (_iris_v1_JobSpec | null);
  /**
   * Bumped on every change of the job or its tasks; WatchJob sends each new version once.
   */
  'version'?: (number | string | Long);
  /**
   * The job's tasks counted by state (all of them, whatever page `tasks` holds).
   */
  'taskCounts'?: ({[key: string]: number});
  /**
   * Number of tasks of the job.
   */
  'numTasks'?: (number);
  /**
   * When `tasks` is one page of several: the token of the next (GetJobRequest.task_page_token).
   */
  'nextTaskPageToken'?: (string);
}

export interface JobStatus__Output {
  'name': (string);
  /**
   * Immutable id of this submission (a finished name can be submitted again).
   */
  'instanceId': (string);
  /**
   * PENDING | RUNNING | SUCCEEDED | FAILED | KILLED | UNSCHEDULABLE
   */
  'state': (string);
  'error': (string);
  'tasks': (_iris_v1_TaskStatus__Output)[];
  'submittedAtMs': (number);
  'finishedAtMs': (number);
  'spec': (_iris_v1_JobSpec__Output | null);
  /**
   * Bumped on every change of the job or its tasks; WatchJob sends each new version once.
   */
  'version': (number);
  /**
   * The job's tasks counted by state (all of them, whatever page `tasks` holds).
   */
  'taskCounts': ({[key: string]: number});
  /**
   * Number of tasks of the job.
   */
  'numTasks': (number);
  /**
   * When `tasks` is one page of several: the token of the next (GetJobRequest.task_page_token).
   */
  'nextTaskPageToken': (string);
}
