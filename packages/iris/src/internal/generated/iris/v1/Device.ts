// Original file: proto/iris/v1/types.proto


/**
 * `count` accelerators of one kind (e.g. kind "gpu").
 */
export interface Device {
  'kind'?: (string);
  'count'?: (number);
}

/**
 * `count` accelerators of one kind (e.g. kind "gpu").
 */
export interface Device__Output {
  'kind': (string);
  'count': (number);
}
