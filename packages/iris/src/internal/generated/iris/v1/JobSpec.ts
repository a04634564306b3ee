// Original file: proto/iris/v1/types.proto

import type { Entrypoint as _iris_v1_Entrypoint, Entrypoint__Output as _iris_v1_Entrypoint__Output } from '../../iris/v1/Entrypoint.ts';
import type { Resources as _iris_v1_Resources, Resources__Output as _iris_v1_Resources__Output } from '../../iris/v1/Resources.ts';
import type { Constraint as _iris_v1_Constraint, Constraint__Output as _iris_v1_Constraint__Output } from '../../iris/v1/Constraint.ts';
import type { Long } from '@grpc/proto-loader';

/**
 * What a client submits. The controller validates it (INVALID_ARGUMENT names the field).
 */
export interface JobSpec {
  /**
   * Full hierarchical name: "/user/job" or, for a child, "/user/job/child".
   */
  'name'?: (string);
  'entrypoint'?: (_iris_v1_Entrypoint | null);
  /**
   * Number of tasks (absent: 1).
   */
  'replicas'?: (number);
  /**
   * All tasks placed together or none; a member's failure restarts the whole gang.
   */
  'gang'?: (boolean);
  'resources'?: (_iris_v1_Resources | null);
  'constraints'?: (_iris_v1_Constraint)[];
  'env'?: ({[key: string]: string});
  /**
   * Named ports allocated by the worker, exposed as IRIS_PORT_<NAME upper-cased>.
   */
  'ports'?: (string)[];
  /**
   * Per-task wall-clock limit of one attempt; 0 means none.
   */
  'timeoutMs'?: (number | string | Long);
  /**
   * Budgets; absent means the default (0, 10 and 0).
   */
  'maxRetriesFailure'?: (number);
  'maxRetriesPreemption'?: (number);
  'maxTaskFailures'?: (number);
  /**
   * Higher runs first (default 0).
   */
  'priority'?: (number);
  /**
   * How long a task may wait while no live worker could ever hold it before it becomes
   * UNSCHEDULABLE; 0 = forever; absent = the controller's default (5 minutes).
   */
  'schedulingTimeoutMs'?: (number | string | Long);
  /**
   * The code bundle the tasks run from ("sha256:<64 hex>", uploaded with UploadBundle; "" = none).
   * With a bundle, a module entrypoint's `module` and a command's `cwd` may be relative to the
   * bundle's root, and a command without `cwd` runs there.
   */
  'bundleId'?: (string);
  '_replicas'?: "replicas";
  '_maxRetriesFailure'?: "maxRetriesFailure";
  '_maxRetriesPreemption'?: "maxRetriesPreemption";
  '_maxTaskFailures'?: "maxTaskFailures";
  '_schedulingTimeoutMs'?: "schedulingTimeoutMs";
}

/**
 * What a client submits. The controller validates it (INVALID_ARGUMENT names the field).
 */
export interface JobSpec__Output {
  /**
   * Full hierarchical name: "/user/job" or, for a child, "/user/job/child".
   */
  'name': (string);
  'entrypoint': (_iris_v1_Entrypoint__Output | null);
  /**
   * Number of tasks (absent: 1).
   */
  'replicas'?: (number);
  /**
   * All tasks placed together or none; a member's failure restarts the whole gang.
   */
  'gang': (boolean);
  'resources': (_iris_v1_Resources__Output | null);
  'constraints': (_iris_v1_Constraint__Output)[];
  'env': ({[key: string]: string});
  /**
   * Named ports allocated by the worker, exposed as IRIS_PORT_<NAME upper-cased>.
   */
  'ports': (string)[];
  /**
   * Per-task wall-clock limit of one attempt; 0 means none.
   */
  'timeoutMs': (number);
  /**
   * Budgets; absent means the default (0, 10 and 0).
   */
  'maxRetriesFailure'?: (number);
  'maxRetriesPreemption'?: (number);
  'maxTaskFailures'?: (number);
  /**
   * Higher runs first (default 0).
   */
  'priority': (number);
  /**
   * How long a task may wait while no live worker could ever hold it before it becomes
   * UNSCHEDULABLE; 0 = forever; absent = the controller's default (5 minutes).
   */
  'schedulingTimeoutMs'?: (number);
  /**
   * The code bundle the tasks run from ("sha256:<64 hex>", uploaded with UploadBundle; "" = none).
   * With a bundle, a module entrypoint's `module` and a command's `cwd` may be relative to the
   * bundle's root, and a command without `cwd` runs there.
   */
  'bundleId': (string);
  '_replicas'?: "replicas";
  '_maxRetriesFailure'?: "maxRetriesFailure";
  '_maxRetriesPreemption'?: "maxRetriesPreemption";
  '_maxTaskFailures'?: "maxTaskFailures";
  '_schedulingTimeoutMs'?: "schedulingTimeoutMs";
}
