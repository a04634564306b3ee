// Original file: proto/iris/v1/worker.proto


/**
 * reason: KILLED (user/cascade) | PEER_FAILED (gang) | TIMEOUT | SUPERSEDED (controller no longer
 * wants it, e.g. after the worker was declared lost) | FAILED (job failed)
 */
export interface StopAttempt {
  'attemptUid'?: (string);
  'reason'?: (string);
}

/**
 * reason: KILLED (user/cascade) | PEER_FAILED (gang) | TIMEOUT | SUPERSEDED (controller no longer
 * wants it, e.g. after the worker was declared lost) | FAILED (job failed)
 */
export interface StopAttempt__Output {
  'attemptUid': (string);
  'reason': (string);
}
