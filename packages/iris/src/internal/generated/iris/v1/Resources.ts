// Original file: proto/iris/v1/types.proto

import type { Device as _iris_v1_Device, Device__Output as _iris_v1_Device__Output } from '../../iris/v1/Device.ts';
import type { Long } from '@grpc/proto-loader';

/**
 * Compute resources. cpu in millicores (1000 = one core), memory in bytes. In a JobSpec an absent
 * field means the default (1000 millicores, no memory request).
 */
export interface Resources {
  'cpuMillis'?: (number | string | Long);
  'memoryBytes'?: (number | string | Long);
  'devices'?: (_iris_v1_Device)[];
  '_cpuMillis'?: "cpuMillis";
  '_memoryBytes'?: "memoryBytes";
}

/**
 * Compute resources. cpu in millicores (1000 = one core), memory in bytes. In a JobSpec an absent
 * field means the default (1000 millicores, no memory request).
 */
export interface Resources__Output {
  'cpuMillis'?: (number);
  'memoryBytes'?: (number);
  'devices': (_iris_v1_Device__Output)[];
  '_cpuMillis'?: "cpuMillis";
  '_memoryBytes'?: "memoryBytes";
}
