// Original file: proto/iris/v1/controller.proto


export interface MintEndpointTokenRequest {
  /**
   * Endpoint name, relative (scoped to the root job of `scope_job`) or starting with "/".
   */
  'name'?: (string);
  'scopeJob'?: (string);
  /**
   * Lifetime in seconds; 0 = the default (1 h); clamped to [60, 86400].
   */
  'ttlSeconds'?: (number);
}

export interface MintEndpointTokenRequest__Output {
  /**
   * Endpoint name, relative (scoped to the root job of `scope_job`) or starting with "/".
   */
  'name': (string);
  'scopeJob': (string);
  /**
   * Lifetime in seconds; 0 = the default (1 h); clamped to [60, 86400].
   */
  'ttlSeconds': (number);
}
