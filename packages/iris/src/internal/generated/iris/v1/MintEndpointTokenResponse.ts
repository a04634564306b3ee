// Original file: proto/iris/v1/controller.proto

import type { Long } from '@grpc/proto-loader';

export interface MintEndpointTokenResponse {
  /**
   * The endpoint's full name the token is bound to.
   */
  'name'?: (string);
  /**
   * The capability token (HMAC-signed name and expiry).
   */
  'token'?: (string);
  /**
   * "http://<controller http>/cap/<token>": append the service's path (`/v1/models`).
   */
  'url'?: (string);
  /**
   * "/cap/<token>": the same without the controller's address.
   */
  'path'?: (string);
  'expiresAtMs'?: (number | string | Long);
}

export interface MintEndpointTokenResponse__Output {
  /**
   * The endpoint's full name the token is bound to.
   */
  'name': (string);
  /**
   * The capability token (HMAC-signed name and expiry).
   */
  'token': (string);
  /**
   * "http://<controller http>/cap/<token>": append the service's path (`/v1/models`).
   */
  'url': (string);
  /**
   * "/cap/<token>": the same without the controller's address.
   */
  'path': (string);
  'expiresAtMs': (number);
}
