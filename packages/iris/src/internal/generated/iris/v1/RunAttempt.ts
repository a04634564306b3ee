// Original file: proto/iris/v1/worker.proto

import type { Entrypoint as _iris_v1_Entrypoint, Entrypoint__Output as _iris_v1_Entrypoint__Output } from '../../iris/v1/Entrypoint.ts';
import type { Resources as _iris_v1_Resources, Resources__Output as _iris_v1_Resources__Output } from '../../iris/v1/Resources.ts';
import type { Long } from '@grpc/proto-loader';

/**
 * Everything an attempt needs to run.
 */
export interface RunAttempt {
  'attemptUid'?: (string);
  'jobId'?: (string);
  'jobInstanceId'?: (string);
  'taskId'?: (string);
  'taskIndex'?: (number);
  'numTasks'?: (number);
  'attempt'?: (number);
  'entrypoint'?: (_iris_v1_Entrypoint | null);
  /**
   * Job env; the worker adds the IRIS_* variables on top (IRIS_* wins).
   */
  'env'?: ({[key: string]: string});
  'ports'?: (string)[];
  'resources'?: (_iris_v1_Resources | null);
  'timeoutMs'?: (number | string | Long);
  /**
   * The job's code bundle ("sha256:<hex>"; "" = none): the worker fetches, unpacks and builds it
   * (the attempt is BUILDING meanwhile) and runs the entrypoint from inside it.
   */
  'bundleId'?: (string);
  /**
   * The attempt's own token (set when the controller has auth on): the worker hands it to the
   * task as IRIS_AUTH_TOKEN, never its own. Valid while the attempt runs, scoped to its job tree.
   */
  'taskToken'?: (string);
}

/**
 * Everything an attempt needs to run.
 */
export interface RunAttempt__Output {
  'attemptUid': (string);
  'jobId': (string);
  'jobInstanceId': (string);
  'taskId': (string);
  'taskIndex': (number);
  'numTasks': (number);
  'attempt': (number);
  'entrypoint': (_iris_v1_Entrypoint__Output | null);
  /**
   * Job env; the worker adds the IRIS_* variables on top (IRIS_* wins).
   */
  'env': ({[key: string]: string});
  'ports': (string)[];
  'resources': (_iris_v1_Resources__Output | null);
  'timeoutMs': (number);
  /**
   * The job's code bundle ("sha256:<hex>"; "" = none): the worker fetches, unpacks and builds it
   * (the attempt is BUILDING meanwhile) and runs the entrypoint from inside it.
   */
  'bundleId': (string);
  /**
   * The attempt's own token (set when the controller has auth on): the worker hands it to the
   * task as IRIS_AUTH_TOKEN, never its own. Valid while the attempt runs, scoped to its job tree.
   */
  'taskToken': (string);
}
