// Original file: proto/iris/v1/controller.proto

import type { Endpoint as _iris_v1_Endpoint, Endpoint__Output as _iris_v1_Endpoint__Output } from '../../iris/v1/Endpoint.ts';

export interface ListEndpointsResponse {
  'endpoints'?: (_iris_v1_Endpoint)[];
}

export interface ListEndpointsResponse__Output {
  'endpoints': (_iris_v1_Endpoint__Output)[];
}
