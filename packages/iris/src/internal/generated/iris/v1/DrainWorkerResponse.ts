// Original file: proto/iris/v1/controller.proto


export interface DrainWorkerResponse {
  /**
   * Attempts that were running there and were preempted by this call.
   */
  'preempted'?: (number);
}

export interface DrainWorkerResponse__Output {
  /**
   * Attempts that were running there and were preempted by this call.
   */
  'preempted': (number);
}
