// Original file: proto/iris/v1/types.proto


export interface Endpoint {
  /**
   * Full name ("/user/root/name").
   */
  'name'?: (string);
  'address'?: (string);
  'metadata'?: ({[key: string]: string});
  'endpointId'?: (string);
  /**
   * "<task id>:<attempt>" of the registering attempt ("" if registered from outside a task).
   */
  'attemptId'?: (string);
}

export interface Endpoint__Output {
  /**
   * Full name ("/user/root/name").
   */
  'name': (string);
  'address': (string);
  'metadata': ({[key: string]: string});
  'endpointId': (string);
  /**
   * "<task id>:<attempt>" of the registering attempt ("" if registered from outside a task).
   */
  'attemptId': (string);
}
