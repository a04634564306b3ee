// Original file: proto/iris/v1/controller.proto


export interface ResolveEndpointRequest {
  'name'?: (string);
  /**
   * Job whose root scopes a relative name.
   */
  'scopeJob'?: (string);
}

export interface ResolveEndpointRequest__Output {
  'name': (string);
  /**
   * Job whose root scopes a relative name.
   */
  'scopeJob': (string);
}
