// Original file: proto/iris/v1/controller.proto


export interface RegisterEndpointRequest {
  /**
   * Relative names are scoped to the root job of `attempt_id` (or of `scope_job`); names
   * starting with "/" are used as given.
   */
  'name'?: (string);
  'address'?: (string);
  'metadata'?: ({[key: string]: string});
  /**
   * "<task id>:<attempt>": the endpoint is leased to this attempt and removed when it ends; a
   * newer attempt of the same task registering the same name replaces it. "" = unleased.
   */
  'attemptId'?: (string);
  'scopeJob'?: (string);
}

export interface RegisterEndpointRequest__Output {
  /**
   * Relative names are scoped to the root job of `attempt_id` (or of `scope_job`); names
   * starting with "/" are used as given.
   */
  'name': (string);
  'address': (string);
  'metadata': ({[key: string]: string});
  /**
   * "<task id>:<attempt>": the endpoint is leased to this attempt and removed when it ends; a
   * newer attempt of the same task registering the same name replaces it. "" = unleased.
   */
  'attemptId': (string);
  'scopeJob': (string);
}
